/**
 * What a launch takes from outside the request, decided once at creation and frozen with the policy
 * (SPEC LOC-5): the provider and its default model, and the text the frozen prompt carries — the
 * project's rules (`ignore_rules`), the owner's personal instructions and skills (`skills`,
 * `ignore_user_config`), and the list of available skills offered to the model.
 *
 * Pure: files are found and read by injected look-ups (the daemon's launch-files.ts), so every rule
 * here is testable without a disk. The rendered text goes into the receipt, so the system prompt is
 * byte-identical on every turn and after a restart, whatever happens to the files later.
 */
import { LaunchPolicyError, type CreateSessionParams } from './launch-params.js';

/** The daemon's providers as a launch sees them: names and models, never URLs or keys. */
export interface ProviderCatalogue {
  readonly defaultProvider: string;
  readonly names: readonly string[];
  defaultModel(provider: string): string;
  /** False for a provider configured with `reasoning_format: none`. */
  acceptsReasoning(provider: string): boolean;
  /**
   * The models a provider lists (its `models:` in config.yaml), or null when it takes any name
   * (the `model:` block, the demo model). Absent: every provider takes any name.
   */
  modelList?(provider: string): readonly string[] | null;
}

/** Refuses (`invalid_params`, field `model`) a model the provider's list does not name. */
export function checkListedModel(catalogue: ProviderCatalogue, provider: string, model: string): void {
  const listed = catalogue.modelList?.(provider) ?? null;
  if (listed === null || listed.includes(model)) return;
  throw new LaunchPolicyError(
    'model',
    `provider "${provider}" lists no model "${model}"; its models: ${listed.join(', ')}`,
  );
}

/** An instruction file found for a launch. */
export interface InstructionFile {
  path: string;
  text: string;
  /** The file's size when only a prefix was read into `text`. */
  size?: number;
}

/** A skill of the home: `<home>/skills/<name>/SKILL.md` with front matter name + description. */
export interface SkillSummary {
  name: string;
  description: string;
  path: string;
}
export interface SkillDocument extends SkillSummary {
  /** The file without its front matter. */
  body: string;
}

/** Bytes of project rules the frozen prompt carries, all files together. */
export const PROJECT_RULES_MAX_BYTES = 32 * 1024;
/** Bytes of the personal instructions, and of each named skill. */
export const PERSONAL_MAX_BYTES = 16 * 1024;
export const SKILL_MAX_BYTES = 16 * 1024;

/** `text` cut to `maxBytes` of UTF-8, with a note saying what was left out. */
export function capText(text: string, maxBytes: number, path: string, size?: number): string {
  const bytes = Buffer.from(text, 'utf8');
  const total = Math.max(size ?? 0, bytes.length);
  if (total <= maxBytes) return text;
  // A cut inside a multi-byte character decodes to U+FFFD: drop it.
  const kept = bytes
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
  return `${kept}\n\n[truncated: the first ${Buffer.byteLength(kept)} of ${total} bytes of ${path} are shown]`;
}

/** The provider and model of a launch, or LaunchPolicyError (`provider` unknown, or clashing). */
export function freezeProvider(
  params: CreateSessionParams,
  catalogue: ProviderCatalogue,
  defaultModel: string,
): { provider: string | null; model: string } {
  if (params.provider !== undefined && params.base_url !== undefined) {
    throw new LaunchPolicyError(
      'provider',
      'provider and base_url cannot be combined: base_url names its own endpoint, provider a configured one',
    );
  }
  // A session with its own endpoint has no configured provider.
  if (params.base_url !== undefined) return { provider: null, model: params.model ?? defaultModel };
  const provider = params.provider ?? catalogue.defaultProvider;
  if (!catalogue.names.includes(provider)) {
    throw new LaunchPolicyError(
      'provider',
      `unknown provider "${provider}"; configured: ${catalogue.names.join(', ')}`,
    );
  }
  if (params.reasoning !== undefined && !catalogue.acceptsReasoning(provider)) {
    throw new LaunchPolicyError(
      'reasoning',
      `provider "${provider}" takes no reasoning effort (reasoning_format: none in config.yaml); leave reasoning out`,
    );
  }
  if (params.model !== undefined) checkListedModel(catalogue, provider, params.model);
  return { provider, model: params.model ?? catalogue.defaultModel(provider) };
}

export function renderProjectRules(files: readonly InstructionFile[]): string | null {
  if (files.length === 0) return null;
  let budget = PROJECT_RULES_MAX_BYTES;
  const sections: string[] = [];
  for (const file of files) {
    if (budget <= 0) {
      sections.push(
        `### ${file.path}\n\n[left out: the project rules already fill their ${PROJECT_RULES_MAX_BYTES} bytes]`,
      );
      continue;
    }
    const text = capText(file.text.trim(), budget, file.path, file.size);
    budget -= Buffer.byteLength(text);
    sections.push(`### ${file.path}\n\n${text}`);
  }
  return [
    '## Project rules',
    '',
    'The project keeps these instruction files, found from the working directory up to its repository root (outermost first). Follow them.',
    '',
    sections.join('\n\n'),
  ].join('\n');
}

export function renderPersonalInstructions(file: InstructionFile | null): string | null {
  if (!file || file.text.trim() === '') return null;
  return `## Personal instructions\n\n${capText(file.text.trim(), PERSONAL_MAX_BYTES, file.path, file.size)}`;
}

export function renderSkill(skill: SkillDocument): string {
  return `## Skill: ${skill.name}\n\n${capText(skill.body.trim(), SKILL_MAX_BYTES, skill.path)}`;
}

export function renderAvailableSkills(skills: readonly SkillSummary[]): string | null {
  if (skills.length === 0) return null;
  const lines = skills.map((s) => `- ${s.name}: ${s.description} (${s.path})`);
  return [
    '## Available skills',
    '',
    "Each skill is a file of instructions for one kind of task. When a task matches a skill's description, read its file before you start.",
    '',
    ...lines,
  ].join('\n');
}
