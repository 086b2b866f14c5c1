/**
 * The launch policy of a gateway-owned local session (SPEC LOC-4..6): what `session.create` may ask
 * for, validated as a closed schema and frozen at creation. Attaching never changes it.
 *
 * Pure apart from two injected look-ups (does a directory exist, is it a code workspace), so every
 * rule is testable without a disk.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { GatewayError } from '../errors.js';
import { withinLimit, type BudgetAmount } from '../budget/decide.js';
import {
  freezeProvider,
  renderAvailableSkills,
  renderPersonalInstructions,
  renderProjectRules,
  renderSkill,
  type InstructionFile,
  type ProviderCatalogue,
  type SkillDocument,
  type SkillSummary,
} from './launch-context.js';
import {
  createSessionParams,
  LaunchPolicyError,
  LOCAL_SOURCES,
  MACHINE_SOURCES,
  type CreateSessionParams,
  type LocalSource,
  type REASONING_EFFORTS,
} from './launch-params.js';
import type { McpSessionServers } from '../../runtime/mcp/config.js';
import type { SessionMcpServers } from '../../runtime/mcp/pool.js';
import { withoutValues } from '../../runtime/mcp/values.js';

/** Where a session's instructions came from: the project's rule files and the personal file. */
export interface InstructionFiles {
  rules: string[];
  personal: string | null;
}

/** The frozen policy, as stored in the creation receipt. Never holds the api_key. */
export interface LaunchPolicy {
  source: LocalSource;
  platform: (typeof LOCAL_SOURCES)[LocalSource];
  cwd: string;
  model: string;
  toolsets: string[];
  /** `focus` when the cwd is a code workspace and toolsets were not explicit (decided once). */
  coding_context: 'focus' | null;
  /** The configured provider, chosen at creation; null when the session has its own base_url. */
  provider: string | null;
  base_url: string | null;
  /** Whether the creator supplied an api_key (held in the owner's memory only, LOC-5). */
  requires_api_key: boolean;
  reasoning: (typeof REASONING_EFFORTS)[number] | null;
  max_turns: number;
  /** The session's own budget limit (docs/cost.md), at most the profile's; absent or null: the profile's. */
  budget?: BudgetAmount | null;
  skills: string[];
  /** The skills' text, rendered once into the frozen prompt at creation. */
  skills_prompt: string | null;
  /** The project's instruction files (unless ignore_rules), rendered once at creation. */
  rules_prompt?: string | null;
  /** The owner's personal instructions from the home (unless ignore_user_config). */
  personal_prompt?: string | null;
  /** The skills offered to the model by name and description (`skills.offer_available`). */
  available_skills_prompt?: string | null;
  /**
   * The files the rules and personal prompts were read from, for the chat's banner and
   * session.info (absent on sessions created before it was kept).
   */
  instruction_files?: InstructionFiles;
  yolo: boolean;
  checkpoints: boolean;
  accept_hooks: boolean;
  pass_session_id: boolean;
  ignore_rules: boolean;
  safe_mode: boolean;
  ignore_user_config: boolean;
  editor: string | null;
  title: string | null;
  hidden: boolean;
  /**
   * MCP servers (issue 27): the profile's by name, as they were enabled at creation, and the
   * session's own in full but for their env and header values, which only the daemon's memory
   * holds (runtime/mcp/values.ts). Absent on sessions created before MCP servers existed: none.
   */
  mcp_servers?: SessionMcpServers;
}

/** What the daemon's configuration contributes to a policy. */
export interface LaunchDefaults {
  cwd: string;
  model: string;
  /** The profile's toolsets for a plain session. */
  toolsets: readonly string[];
  /** Toolsets that exist in this daemon. */
  knownToolsets: readonly string[];
  maxTurns: number;
  /** The profile's `budgets.session`; absent: no session limit in the profile. */
  sessionBudget?: BudgetAmount;
  /** The configured providers (launch-context.ts). */
  providers: ProviderCatalogue;
  /** Whether the frozen prompt lists the home's skills for the model (`skills.offer_available`). */
  offerSkills: boolean;
  /** The profile's enabled MCP servers (`mcp_servers:` in config.yaml), by name. */
  mcpServers?: readonly string[];
}

export interface LaunchLookups {
  isDirectory(path: string): boolean;
  isCodeWorkspace(path: string): boolean;
  /** A named skill of the home, or null when there is no such skill. */
  readSkill(name: string): SkillDocument | null;
  /** Every skill of the home. */
  listSkills(): SkillSummary[];
  /** The project's instruction files for `cwd`, outermost first. */
  projectRules(cwd: string): InstructionFile[];
  /** The owner's personal instructions in the home, or null. */
  personalInstructions(): InstructionFile | null;
  /** The gateway folder (its home, its socket's) `cwd` lies in, or null: tools may not work there. */
  cwdRefusal?(cwd: string): string | null;
  /** Why this host cannot isolate a safe_mode session, or null when it can. */
  safeModeRefusal?(): string | null;
  /** Why this host cannot take checkpoints (no git), or null when it can. */
  checkpointsRefusal?(): string | null;
}

const SURFACE_TOOLSETS: Record<LocalSource, readonly string[]> = {
  cli: [],
  tui: ['project'],
  gui: ['project', 'desktop_ui', 'catalog'],
  acp: [],
  api: [],
  tool: [],
  oneshot: [],
};

function validateBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new LaunchPolicyError('base_url', 'base_url must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new LaunchPolicyError('base_url', 'base_url must use http or https');
  }
  if (url.username || url.password) {
    throw new LaunchPolicyError('base_url', 'base_url must not carry credentials: pass api_key instead');
  }
  if (url.search || raw.includes('?'))
    throw new LaunchPolicyError('base_url', 'base_url must not have a query');
  if (url.hash || raw.includes('#'))
    throw new LaunchPolicyError('base_url', 'base_url must not have a fragment');
  return url.toString().replace(/\/$/, '');
}

/** Freezes the launch policy of a new session, or throws LaunchPolicyError. */
export function freezeLaunchPolicy(
  params: CreateSessionParams,
  defaults: LaunchDefaults,
  lookups: LaunchLookups,
): LaunchPolicy {
  const source = params.source ?? 'cli';
  const cwd = params.cwd ?? defaults.cwd;
  if (!cwd.startsWith('/')) throw new LaunchPolicyError('cwd', 'cwd must be an absolute path');
  if (cwd.split('/').includes('..')) throw new LaunchPolicyError('cwd', 'cwd must not contain ".." segments');
  if (!lookups.isDirectory(cwd))
    throw new LaunchPolicyError('cwd', `cwd ${cwd} is not an existing directory`);
  const gatewayFolder = lookups.cwdRefusal?.(cwd) ?? null;
  if (gatewayFolder !== null)
    throw new GatewayError(
      'cwd_in_home',
      `cwd ${cwd} is inside the gateway's own folder ${gatewayFolder}; tools may not work there: choose another cwd`,
      { field: 'cwd' },
    );

  if (params.editor !== undefined && source !== 'acp') {
    throw new LaunchPolicyError('editor', 'editor is only accepted with source "acp"');
  }

  const explicit = params.toolsets !== undefined;
  let toolsets: string[];
  if (explicit) {
    toolsets = [...new Set(params.toolsets)];
    if ((source === 'cli' || source === 'tui') && toolsets.includes('desktop_ui')) {
      throw new LaunchPolicyError('toolsets', `source "${source}" may not request the desktop_ui toolset`);
    }
  } else {
    toolsets = [...new Set([...defaults.toolsets, ...SURFACE_TOOLSETS[source]])];
  }
  const unknown = toolsets.filter((t) => !defaults.knownToolsets.includes(t));
  if (unknown.length > 0) {
    throw new LaunchPolicyError(
      'toolsets',
      `unknown toolset${unknown.length > 1 ? 's' : ''} ${unknown.map((t) => `"${t}"`).join(', ')}; known: ${defaults.knownToolsets.join(', ')}`,
    );
  }

  const safeMode = params.safe_mode ?? false;
  const refusal = safeMode ? (lookups.safeModeRefusal?.() ?? null) : null;
  if (refusal !== null)
    throw new LaunchPolicyError('safe_mode', `safe_mode cannot be honoured here: ${refusal}`);
  const noCheckpoints = params.checkpoints === true ? (lookups.checkpointsRefusal?.() ?? null) : null;
  if (noCheckpoints !== null)
    throw new LaunchPolicyError('checkpoints', `checkpoints cannot be honoured here: ${noCheckpoints}`);
  const ignoreUserConfig = safeMode || (params.ignore_user_config ?? false);
  const skills = [...new Set(params.skills ?? [])];
  let skillsPrompt: string | null = null;
  if (skills.length > 0) {
    if (ignoreUserConfig) {
      throw new LaunchPolicyError('skills', 'skills cannot be combined with safe_mode or ignore_user_config');
    }
    const rendered = skills.map((name) => {
      const skill = lookups.readSkill(name);
      if (skill === null)
        throw new LaunchPolicyError('skills', `unknown skill "${name}": see gatehouse skills`);
      return renderSkill(skill);
    });
    skillsPrompt = rendered.join('\n\n');
  }
  const { provider, model } = freezeProvider(params, defaults.providers, defaults.model);
  const budget = freezeBudget(params.budget, defaults.sessionBudget);
  const ignoreRules = params.ignore_rules ?? false;
  const mcpServers = freezeMcpServers(params.mcp_servers ?? {}, defaults.mcpServers ?? []);
  const rules = ignoreRules ? [] : lookups.projectRules(cwd);
  const rulesPrompt = renderProjectRules(rules);
  const personal = ignoreUserConfig ? null : lookups.personalInstructions();
  const personalPrompt = renderPersonalInstructions(personal);

  return {
    source,
    platform: LOCAL_SOURCES[source],
    cwd,
    model,
    toolsets,
    coding_context: !explicit && source !== 'tool' && lookups.isCodeWorkspace(cwd) ? 'focus' : null,
    provider,
    base_url: params.base_url === undefined ? null : validateBaseUrl(params.base_url),
    requires_api_key: params.api_key !== undefined,
    reasoning: params.reasoning ?? null,
    max_turns: params.max_turns ?? defaults.maxTurns,
    budget,
    skills,
    skills_prompt: skillsPrompt,
    rules_prompt: rulesPrompt,
    personal_prompt: personalPrompt,
    instruction_files: {
      rules: rulesPrompt === null ? [] : rules.map((f) => f.path),
      personal: personalPrompt === null ? null : (personal?.path ?? null),
    },
    available_skills_prompt:
      ignoreUserConfig || !defaults.offerSkills ? null : renderAvailableSkills(lookups.listSkills()),
    yolo: params.yolo ?? false,
    checkpoints: params.checkpoints ?? false,
    accept_hooks: params.accept_hooks ?? false,
    pass_session_id: params.pass_session_id ?? false,
    ignore_rules: ignoreRules,
    safe_mode: safeMode,
    ignore_user_config: ignoreUserConfig,
    editor: params.editor ?? null,
    title: params.title ?? null,
    hidden: params.hidden ?? MACHINE_SOURCES.includes(source),
    ...(mcpServers ? { mcp_servers: mcpServers } : {}),
  };
}

/**
 * The profile's servers by name (a later config change to one reaches the session, as a provider's
 * does), minus those the session leaves out or replaces; the session's own in full but for their
 * env and header values (never stored: the creation holds them in memory). Null: none.
 */
function freezeMcpServers(
  requested: McpSessionServers,
  profile: readonly string[],
): SessionMcpServers | null {
  const own: SessionMcpServers['own'] = {};
  for (const [name, server] of Object.entries(requested)) {
    if ('command' in server || 'url' in server) own[name] = withoutValues(server);
    else if (!profile.includes(name))
      throw new LaunchPolicyError(
        'mcp_servers',
        `cannot leave out the MCP server "${name}": the profile has no enabled server of that name${profile.length > 0 ? ` (it has ${profile.join(', ')})` : ''}`,
      );
  }
  const names = profile.filter((name) => !(name in requested));
  if (names.length === 0 && Object.keys(own).length === 0) return null;
  return { profile: names, own };
}

/** The launch's budget, refused (budget_above_profile) where it asks more than the profile allows. */
function freezeBudget(
  asked: CreateSessionParams['budget'],
  profile: BudgetAmount | undefined,
): BudgetAmount | null {
  if (asked === undefined) return null;
  const amount: BudgetAmount = { tokens: asked.tokens ?? null, usd: asked.usd ?? null };
  const ceiling = profile ?? { tokens: null, usd: null };
  const check = withinLimit(amount, ceiling);
  if (!check.ok) {
    const top = ceiling[check.measure]!;
    throw new GatewayError(
      'budget_above_profile',
      `budget.${check.measure} ${amount[check.measure]} is above the profile's budgets.session.${check.measure} (${top}): a session may only lower it; an operator may raise a session's budget once it runs (session.budget.raise)`,
      { field: 'budget', measure: check.measure, profile: top },
    );
  }
  return amount;
}

/** JSON with object keys sorted and undefined fields left out: equal values, equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The digest a repeated request_id is compared by (LOC-3): every requested field except the
 * request_id itself, the api_key and the values of the own MCP servers' env and headers, which are
 * never stored, not even hashed (a retry may supply them again, which is how a client restores
 * them after a daemon restart; the names still count).
 */
export function creationDigest(params: CreateSessionParams): string {
  const { request_id: _requestId, api_key: _apiKey, mcp_servers: mcp, ...rest } = params;
  const servers = mcp === undefined ? undefined : mcpWithoutValues(mcp);
  return createHash('sha256')
    .update(canonicalJson({ ...rest, source: rest.source ?? 'cli', mcp_servers: servers }))
    .digest('hex');
}

function mcpWithoutValues(servers: McpSessionServers): McpSessionServers {
  return Object.fromEntries(
    Object.entries(servers).map(([name, server]) => [
      name,
      'command' in server || 'url' in server ? withoutValues(server) : server,
    ]),
  );
}

/** The creation contract `runtime.describe` publishes, so clients check before sending an option. */
export function creationContract(): { sources: string[]; parameters: Record<string, unknown> } {
  const schema = z.toJSONSchema(createSessionParams) as { properties?: Record<string, unknown> };
  return { sources: Object.keys(LOCAL_SOURCES), parameters: schema.properties ?? {} };
}
