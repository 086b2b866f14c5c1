/**
 * The environment a tool's process gets (SPEC RUN-2, docs/tool-reach.md): an allow-list, never the
 * daemon's own environment. The model can run `env` or read `/proc/<pid>/environ`, so whatever
 * passes here may end up in a transcript; a name is passed only because it is known to be harmless
 * or because the owner listed it (`tools.env_passthrough`, `tools.env`).
 *
 * One function builds it for every tool process: the terminal, the project hooks and the safe-mode
 * worker (which then sets a HOME and TMPDIR of its own).
 */

/** Names every tool process gets from the daemon's environment when they are set. */
export const TOOL_ENV_ALLOW: readonly string[] = [
  'PATH',
  'HOME',
  'LANG',
  'TERM',
  'TZ',
  'USER',
  'LOGNAME',
  'SHELL',
  'TMPDIR',
];

/** `LC_ALL`, `LC_CTYPE`, … : locale settings, never secrets. */
const LOCALE = /^LC_[A-Z_]+$/;

/** What the owner adds (config `tools:`): names passed on from the daemon's environment, and fixed values. */
export interface ToolEnvSettings {
  env_passthrough: readonly string[];
  env: Readonly<Record<string, string>>;
}

export const NO_EXTRA_ENV: ToolEnvSettings = { env_passthrough: [], env: {} };

export function isAllowedName(name: string): boolean {
  return TOOL_ENV_ALLOW.includes(name) || LOCALE.test(name);
}

/**
 * The environment of a tool process: the allow-listed names and the owner's passthrough names taken
 * from `source` (the daemon's environment as read at start), then the owner's fixed values.
 */
export function toolEnvironment(
  source: NodeJS.ProcessEnv,
  settings: ToolEnvSettings = NO_EXTRA_ENV,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined) continue;
    if (isAllowedName(name) || settings.env_passthrough.includes(name)) out[name] = value;
  }
  return { ...out, ...settings.env };
}
