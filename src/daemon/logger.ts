/**
 * The daemon log: JSON lines in <home>/logs/gateway.log, optionally mirrored to stderr when the
 * daemon runs in the foreground. Secrets never reach it, by two independent guards: pino redacts
 * the usual secret-bearing keys at any of the first levels of a log object, and every line is
 * scrubbed of the concrete secret values the daemon knows (configured API keys, tokens) in case
 * one hides in a message string.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

const SECRET_KEYS = [
  'api_key',
  'apiKey',
  'authorization',
  'Authorization',
  'ticket',
  'password',
  'password_hash',
  'cookie',
  'Cookie',
  'set-cookie',
  'token',
];

/** `key`, `*.key` and `*.*.key` for every secret key: pino redaction paths are explicit depths. */
export const REDACT_PATHS = SECRET_KEYS.flatMap((key) => {
  const safe = /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? key : `["${key}"]`;
  const join = (prefix: string) => (safe.startsWith('[') ? `${prefix}${safe}` : `${prefix}.${safe}`);
  return [safe, join('*'), join('*.*')];
});

const REDACTED = '[redacted]';

export interface LoggerOptions {
  readonly file: string;
  readonly stderr?: boolean;
  readonly level?: pino.Level;
  /** Concrete secret values to scrub from every line, wherever they appear. */
  readonly secrets?: readonly string[];
}

export function createLogger(options: LoggerOptions): Logger {
  mkdirSync(dirname(options.file), { recursive: true, mode: 0o700 });
  // Synchronous writes: the log is low-volume, and a crash must not lose the line explaining it.
  const file = pino.destination({ dest: options.file, sync: true, mkdir: true, mode: 0o600 });
  const streams: pino.StreamEntry[] = [{ stream: file }];
  if (options.stderr) streams.push({ stream: process.stderr });
  // A secret may appear raw or JSON-escaped inside a line; scrub both forms.
  const secrets = (options.secrets ?? [])
    .filter((secret) => secret.length > 0)
    .flatMap((secret) => [...new Set([secret, JSON.stringify(secret).slice(1, -1)])]);
  return pino(
    {
      level: options.level ?? 'info',
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      hooks: {
        streamWrite: (line) => secrets.reduce((text, secret) => text.split(secret).join(REDACTED), line),
      },
    },
    pino.multistream(streams),
  );
}
