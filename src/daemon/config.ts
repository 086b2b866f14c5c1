/**
 * Loading the YAML configuration: the file is read, parsed and checked against the closed schema
 * (config-schema.ts), and the first problem is reported with the file and the key path. Keys from
 * older gateways that no longer mean anything are dropped with a notice. Also how status names the
 * configured model and store. The parsed value is immutable by convention.
 */
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { defaultProvider } from './config-providers.js';
import { configSchema, type GatehouseConfig } from './config-schema.js';
import { DaemonError, oneLine } from './errors.js';

/**
 * Timer-based resets from older gateways. SPEC ENT-2: a conversation changes only by /new, /reset,
 * suspension, compression or crash recovery, so these are accepted (old files keep working) and
 * ignored with a notice.
 */
export const IGNORED_TIMER_KEYS = [
  'idle_minutes',
  'daily_reset_hour',
  'reset_policy',
  'reset_mode',
  'session_reset',
  'at_hour',
] as const;

export interface LoadedConfig {
  readonly config: GatehouseConfig;
  readonly file: string;
  /** Things the user should know but that do not stop the daemon (ignored keys, inline secrets). */
  readonly notices: readonly string[];
}

/** Reads and validates `file`; a missing file means every default. */
export function loadConfig(file: string): LoadedConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return parseConfig('', file);
    throw new DaemonError(
      'config_unreadable',
      `cannot read ${file} (${oneLine(error)}): check its permissions`,
    );
  }
  return parseConfig(text, file);
}

/** Parses YAML text as the config of `file` (the name is used in messages only). */
export function parseConfig(text: string, file: string): LoadedConfig {
  const document = parseDocument(text);
  const yamlError = document.errors[0];
  if (yamlError) {
    const line = yamlError.linePos?.[0]?.line;
    throw new DaemonError(
      'config_invalid',
      `${file}${line ? ` line ${line}` : ''}: not valid YAML (${oneLine(yamlError.message).replace(/ at line \d+, column \d+:?$/, '')}): fix the file or delete it to start from defaults`,
    );
  }
  const raw: unknown = document.toJS() ?? {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new DaemonError('config_invalid', `${file}: the top level must be a mapping of keys to values`);
  }
  const { cleaned, notices } = dropIgnoredTimerKeys(raw as Record<string, unknown>);
  // Without zod's compiled fast path: the config is parsed once per process, and generating and
  // compiling that code (new Function, per object schema) cost more than the one parse it speeds.
  const result = configSchema.safeParse(cleaned, { jitless: true });
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new DaemonError('config_invalid', `${file}: ${describeIssue(issue)} (see docs/configuration.md)`);
  }
  const config = result.data;
  if (config.model?.api_key !== undefined) {
    notices.push(
      `model.api_key is written inline in ${file}; prefer model.api_key_env (the name of an environment variable)`,
    );
  }
  return { config, file, notices };
}

/**
 * One rule everywhere: a timer key is dropped with a notice wherever it sits (top level, `sessions`,
 * a platform's section or any other mapping), so an old file neither stops the daemon in one
 * section nor passes silently in another.
 */
function dropIgnoredTimerKeys(raw: Record<string, unknown>): {
  cleaned: Record<string, unknown>;
  notices: string[];
} {
  const notices: string[] = [];
  const strip = (section: Record<string, unknown>, prefix: string): Record<string, unknown> => {
    const kept: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(section)) {
      if ((IGNORED_TIMER_KEYS as readonly string[]).includes(key)) {
        notices.push(
          `${prefix}${key} is ignored: sessions never reset on a timer (only /new, /reset, suspension, compression or crash recovery change them)`,
        );
      } else if (value && typeof value === 'object' && !Array.isArray(value)) {
        kept[key] = strip(value as Record<string, unknown>, `${prefix}${key}.`);
      } else {
        kept[key] = value;
      }
    }
    return kept;
  };
  return { cleaned: strip(raw, ''), notices };
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((key) => (path ? `${path}.${key}` : key));
    return `${keys.join(', ')}: unknown key${keys.length > 1 ? 's' : ''}`;
  }
  return `${path || '(top level)'}: ${issue.message}`;
}

export const DEMO_MODEL_DESCRIPTION = 'built-in demo model (scripted stand-in, no account needed)';

/** How `status` and the chat banner name the model in use. */
export function describeModel(config: GatehouseConfig): string {
  const provider = defaultProvider(config);
  if (!provider) return DEMO_MODEL_DESCRIPTION;
  return `${provider.models[0]!.name} at ${provider.base_url}`;
}

/** The store a config selects, as status and doctor show it (the variable's name, never the URL). */
export function describeStore(config: GatehouseConfig): string {
  return config.store.kind === 'postgres'
    ? `postgres (URL from $${config.store.url_env})`
    : 'sqlite (state.db in the profile folder)';
}
