/**
 * The daemon log: JSON lines in <home>/logs/gateway.log, optionally mirrored to stderr when the
 * daemon runs in the foreground. Secrets never reach it, by two independent guards: pino redacts
 * the usual secret-bearing keys at any of the first levels of a log object, and every line is
 * scrubbed of the concrete secret values the daemon knows (configured API keys, tokens) in case
 * one hides in a message string. The file is rotated by size (log-file.ts), and a warning repeated
 * past a few times a minute is counted instead of written, then summarised (log-repeats.ts).
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import pino, { type Logger } from 'pino';
import { RotatingLogFile, type LogRotation } from './log-file.js';
import { RepeatLimiter, type RepeatSummary } from './log-repeats.js';

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
  readonly rotation?: LogRotation;
  /** Warnings with the same message written per window before they are only counted. */
  readonly repeats?: { readonly perWindow: number; readonly windowMs: number };
  readonly now?: () => number;
}

/** The message of the summary line written for suppressed repeats. */
export const SUPPRESSED_MESSAGE = 'repeated log lines suppressed';
const WARN_LEVEL = 40;
const repeatLimiters = new WeakMap<Logger, RepeatLimiter>();

/** The message a pino call logs: `(msg)`, `(obj, msg)` or `(err)`. */
function messageOf(args: readonly unknown[]): string {
  if (typeof args[0] === 'string') return args[0];
  if (typeof args[1] === 'string') return args[1];
  return args[0] instanceof Error ? args[0].message : '';
}

function summaryLine(summary: RepeatSummary): [object, string] {
  return [{ repeated: summary.key, suppressed: summary.suppressed }, SUPPRESSED_MESSAGE];
}

/** Writes the summaries of every suppressed repeat now (before the daemon exits). */
export function flushRepeatedLines(logger: Logger): void {
  for (const summary of repeatLimiters.get(logger)?.due(true) ?? []) logger.warn(...summaryLine(summary));
}

export function createLogger(options: LoggerOptions): Logger {
  mkdirSync(dirname(options.file), { recursive: true, mode: 0o700 });
  const streams: pino.StreamEntry[] = [{ stream: new RotatingLogFile(options.file, options.rotation) }];
  if (options.stderr) streams.push({ stream: process.stderr });
  // A secret may appear raw or JSON-escaped inside a line; scrub both forms.
  const secrets = (options.secrets ?? [])
    .filter((secret) => secret.length > 0)
    .flatMap((secret) => [...new Set([secret, JSON.stringify(secret).slice(1, -1)])]);
  const repeats = new RepeatLimiter(
    options.now ?? Date.now,
    options.repeats?.perWindow ?? 10,
    options.repeats?.windowMs ?? 60_000,
  );
  const logger = pino(
    {
      level: options.level ?? 'info',
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      hooks: {
        streamWrite: (line) => secrets.reduce((text, secret) => text.split(secret).join(REDACTED), line),
        // Only warnings are limited: errors are rare and each one matters.
        logMethod(args, method, level) {
          const key = messageOf(args);
          if (level !== WARN_LEVEL || key === SUPPRESSED_MESSAGE) return method.apply(this, args);
          const { write, summary } = repeats.admit(key);
          if (summary) method.apply(this, summaryLine(summary));
          if (write) method.apply(this, args);
        },
      },
    },
    pino.multistream(streams),
  );
  repeatLimiters.set(logger, repeats);
  // A flood that stops still gets its summary once its window is over.
  setInterval(() => {
    for (const summary of repeats.due()) logger.warn(...summaryLine(summary));
  }, repeats.windowMs).unref();
  return logger;
}
