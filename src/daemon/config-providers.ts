/**
 * The `providers` section of the configuration (SPEC LOC-5 `provider`, docs/configuration.md
 * "Providers"): several named OpenAI-compatible endpoints, one of them the default. The older single
 * `model:` block stays valid and is the provider named `default`. A session picks a provider by name
 * at creation; the choice is frozen in its policy.
 *
 * Keys are never written here: `api_key_env` names the environment variable that holds one.
 */
import { z } from 'zod';

/** The name the `model:` block's provider goes by; `providers` may not reuse it beside a `model:` block. */
export const MODEL_BLOCK_PROVIDER = 'default';
/** The name of the built-in demo model when neither `model` nor `providers` is configured. */
export const DEMO_PROVIDER = 'demo';

const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * How a provider takes a reasoning effort: OpenAI's top-level `reasoning_effort: "low"`, the
 * `reasoning: {effort: "low"}` object of OpenRouter, or not at all (a session asking for one is
 * refused at creation).
 */
export const REASONING_FORMATS = ['reasoning_effort', 'reasoning_object', 'none'] as const;
export type ReasoningFormat = (typeof REASONING_FORMATS)[number];

/** An http(s) API root without credentials, query or fragment (the `model:` block uses it too). */
export const apiBaseUrl = z
  .url({
    protocol: /^https?$/,
    error: (issue) =>
      issue.input === undefined
        ? 'required: the http(s) URL of an OpenAI-compatible API, e.g. https://api.openai.com/v1'
        : `must be an http(s) URL like https://api.openai.com/v1, got ${JSON.stringify(issue.input)}`,
  })
  .refine(
    (value) => {
      // Runs even when the URL check above failed; an unparseable value was reported there.
      if (!URL.canParse(value)) return true;
      const url = new URL(value);
      return !url.username && !url.password && !url.search && !url.hash;
    },
    { error: 'must not contain credentials, a query or a fragment' },
  );

export const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be the NAME of an environment variable' });

export const contextWindow = z.number().int().min(1024, { error: 'must be at least 1024 tokens' });

const modelName = z.string().min(1, { error: 'a model name must not be empty' }).max(200);

/**
 * `models`: a list of names, or a mapping of name to its own settings (`context_window`). The first
 * model is the provider's default; other names are still accepted at creation (the provider decides).
 */
const modelsSchema = z
  .union(
    [
      z.array(modelName).min(1, { error: 'must list at least one model' }),
      z.record(modelName, z.strictObject({ context_window: contextWindow.optional() }).nullable()),
    ],
    { error: 'must be a list of model names, or a mapping of model name to {context_window}' },
  )
  .transform((models) =>
    Array.isArray(models)
      ? models.map((name) => ({ name, context_window: undefined as number | undefined }))
      : Object.entries(models).map(([name, settings]) => ({
          name,
          context_window: settings?.context_window,
        })),
  )
  .refine((models) => models.length > 0, { error: 'must list at least one model' });

export const providerSchema = z.strictObject({
  base_url: apiBaseUrl,
  api_key_env: envName.optional(),
  models: modelsSchema,
  /** The window of every model of this provider that names none of its own. */
  context_window: contextWindow.optional(),
  reasoning_format: z.enum(REASONING_FORMATS).default('reasoning_effort'),
});
export type ProviderSection = z.output<typeof providerSchema>;

export const providersSchema = z.record(
  z.string().regex(PROVIDER_NAME, { error: 'provider names use letters, digits, _, . and -' }),
  providerSchema,
);

/** The checks across keys: names are unique and `default_provider` names one of them. */
export function checkProviders(
  config: {
    model?: object | undefined;
    providers?: Record<string, ProviderSection> | undefined;
    default_provider?: string | undefined;
  },
  addIssue: (path: string[], message: string) => void,
): void {
  const names = Object.keys(config.providers ?? {});
  if (config.model && names.includes(MODEL_BLOCK_PROVIDER)) {
    addIssue(
      ['providers', MODEL_BLOCK_PROVIDER],
      `"${MODEL_BLOCK_PROVIDER}" is the name of the model: block's provider; rename this one`,
    );
  }
  if (config.default_provider === undefined) return;
  const known = [...(config.model ? [MODEL_BLOCK_PROVIDER] : []), ...names];
  if (!known.includes(config.default_provider)) {
    addIssue(
      ['default_provider'],
      known.length === 0
        ? 'names a provider, but neither model nor providers is configured'
        : `"${config.default_provider}" is not a configured provider (configured: ${known.join(', ')})`,
    );
  }
}

/** auth.members.providers names configured providers (when any are configured). */
export function checkMemberProviders(
  config: {
    model?: object | undefined;
    providers?: Record<string, ProviderSection> | undefined;
    auth: { members: { providers?: string[] | undefined } };
  },
  addIssue: (path: string[], message: string) => void,
): void {
  const known = [...(config.model ? [MODEL_BLOCK_PROVIDER] : []), ...Object.keys(config.providers ?? {})];
  if (known.length === 0) return;
  for (const name of config.auth.members.providers ?? [])
    if (!known.includes(name))
      addIssue(
        ['auth', 'members', 'providers'],
        `"${name}" is not a configured provider (configured: ${known.join(', ')})`,
      );
}

/** One provider as the daemon runs it: the `model:` block and each `providers` entry alike. */
export interface ProviderSettings {
  name: string;
  base_url: string;
  api_key?: string | undefined;
  api_key_env?: string | undefined;
  /** The first is the default model. */
  models: { name: string; context_window: number | undefined }[];
  context_window: number | undefined;
  reasoning_format: ReasoningFormat;
}

interface ProviderConfig {
  model?:
    | {
        base_url: string;
        model: string;
        api_key?: string | undefined;
        api_key_env?: string | undefined;
        context_window?: number | undefined;
        reasoning_format: ReasoningFormat;
      }
    | undefined;
  providers?: Record<string, ProviderSection> | undefined;
  default_provider?: string | undefined;
}

/** Every configured provider, the `model:` block first; empty when only the demo model runs. */
export function configuredProviders(config: ProviderConfig): ProviderSettings[] {
  const list: ProviderSettings[] = [];
  if (config.model) {
    const m = config.model;
    list.push({
      name: MODEL_BLOCK_PROVIDER,
      base_url: m.base_url,
      api_key: m.api_key,
      api_key_env: m.api_key_env,
      // The block's window is its model's own, as it always was: other names use the family table.
      models: [{ name: m.model, context_window: m.context_window }],
      context_window: undefined,
      reasoning_format: m.reasoning_format,
    });
  }
  for (const [name, p] of Object.entries(config.providers ?? {})) {
    list.push({
      name,
      base_url: p.base_url,
      api_key_env: p.api_key_env,
      models: p.models,
      context_window: p.context_window,
      reasoning_format: p.reasoning_format,
    });
  }
  return list;
}

/** The provider sessions get when they name none: `default_provider`, else the first configured. */
export function defaultProvider(config: ProviderConfig): ProviderSettings | null {
  const list = configuredProviders(config);
  return list.find((p) => p.name === config.default_provider) ?? list[0] ?? null;
}

/** The config key that names a provider's key variable, as messages quote it. */
function keyEnvKey(settings: ProviderSettings): string {
  return settings.name === MODEL_BLOCK_PROVIDER
    ? 'model.api_key_env'
    : `providers.${settings.name}.api_key_env`;
}

/**
 * Where a provider's key comes from, as a refused key's message names it: the variable (and
 * whether it is set here), the inline key, or that none is configured. Never the key itself.
 */
export function describeKeySource(settings: ProviderSettings, env: NodeJS.ProcessEnv): string {
  if (settings.api_key !== undefined) return 'model.api_key in config.yaml';
  if (settings.api_key_env !== undefined) {
    const unset = env[settings.api_key_env] === undefined || env[settings.api_key_env] === '';
    return `the variable ${settings.api_key_env} (${keyEnvKey(settings)})${unset ? ", which is not set in the gateway's environment" : ''}`;
  }
  return `the provider's key: none is configured (set ${keyEnvKey(settings)} to the name of the variable that holds it)`;
}

/** A notice for each provider whose `api_key_env` names a variable this environment lacks. */
export function unsetKeyVariables(config: ProviderConfig, env: NodeJS.ProcessEnv): string[] {
  return configuredProviders(config)
    .filter((p) => p.api_key === undefined && p.api_key_env !== undefined)
    .filter((p) => env[p.api_key_env!] === undefined || env[p.api_key_env!] === '')
    .map(
      (p) =>
        `${keyEnvKey(p)} names ${p.api_key_env}, which is not set in this environment: the provider "${p.name}" will refuse requests until it is (export ${p.api_key_env}=… before starting the gateway)`,
    );
}
