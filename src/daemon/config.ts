/**
 * The YAML configuration: one closed zod schema gives every key its default and its check, so an
 * unknown or malformed key is reported with the file and the key path instead of being ignored.
 * Keys are snake_case, as in the file. The parsed value is immutable by convention.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import {
  apiBaseUrl,
  checkProviders,
  defaultProvider,
  contextWindow,
  envName,
  providersSchema,
  REASONING_FORMATS,
} from './config-providers.js';
import { DaemonError, oneLine } from './errors.js';
import { HOOKS_SCHEMA } from '../runtime/hooks/config.js';

const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

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

const seconds = (what: string) =>
  z.number({ error: `${what} must be a number of seconds` }).int({ error: `${what} must be a whole number` });

/** A whole number in [min, max], every failure said in one sentence naming the key. */
const wholeNumber = (what: string, min: number, max: number) => {
  const error = `${what} must be a whole number from ${min} to ${max}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
};

const modelSchema = z.strictObject({
  base_url: apiBaseUrl,
  model: z.string({ error: 'must be the model name, a string' }).min(1, { error: 'must not be empty' }),
  api_key_env: envName.optional(),
  api_key: z.string().min(1).optional(),
  /**
   * Per attempt: the longest wait for the provider to start answering, and the longest silence
   * between two pieces of a streamed answer (not a cap on a long answer that keeps streaming).
   */
  timeout_s: seconds('model.timeout_s')
    .min(1, { error: 'model.timeout_s must be at least 1 second' })
    .max(3600, { error: 'model.timeout_s must be at most 3600 seconds' })
    .default(60),
  /** Retries after the first attempt of a request that failed before any output (0 = never). */
  max_retries: wholeNumber('model.max_retries', 0, 10).default(3),
  /** Tokens the model accepts in one request; unset: a known family's window, else 128,000. */
  context_window: contextWindow.optional(),
  /** How this provider takes a session's reasoning effort (config-providers.ts). */
  reasoning_format: z.enum(REASONING_FORMATS).default('reasoning_effort'),
});

const proxyAddress = z
  .string()
  .refine((value) => isIP(value) !== 0, { error: 'must be the IP address of the proxy, e.g. 10.0.0.5' });

/** The model client's timeouts and retries from the `model` section (defaults without one). */
export function modelClientLimits(model: z.output<typeof modelSchema> | undefined): {
  firstByteTimeoutMs: number;
  idleTimeoutMs: number;
  retry: { maxRetries: number };
} {
  const timeoutMs = (model?.timeout_s ?? 60) * 1000;
  return {
    firstByteTimeoutMs: timeoutMs,
    idleTimeoutMs: timeoutMs,
    retry: { maxRetries: model?.max_retries ?? 3 },
  };
}

const listenerSchema = z
  .strictObject({
    host: z.string().min(1).default('127.0.0.1'),
    // Absent: DEFAULT_PORT, or a free port when that one is taken (docs/decisions.md).
    port: z
      .number({ error: 'must be a port number (0 = any free port)' })
      .int()
      .min(0, { error: 'must be between 0 and 65535' })
      .max(65535, { error: 'must be between 0 and 65535' })
      .optional(),
    allow_remote: z.boolean().default(false),
    tls: z.strictObject({ cert: z.string().min(1), key: z.string().min(1) }).optional(),
    /**
     * AUTH-6: the addresses of an authenticating reverse proxy in front of a remote listener. Only
     * these peers (and loopback) may then connect.
     */
    trusted_proxy: z
      .union([proxyAddress, z.array(proxyAddress).min(1, { error: 'must list at least one address' })])
      .transform((value) => (Array.isArray(value) ? value : [value]))
      .optional(),
  })
  .superRefine((listener, ctx) => {
    if (isLoopback(listener.host)) return;
    if (!listener.allow_remote) {
      ctx.addIssue({
        code: 'custom',
        path: ['host'],
        message: `${listener.host} is not a loopback address; set listener.allow_remote: true to accept remote peers`,
      });
    } else if (!listener.tls && !listener.trusted_proxy) {
      ctx.addIssue({
        code: 'custom',
        path: ['allow_remote'],
        message:
          `listening on ${listener.host} would send passwords, cookies and tickets in clear text: ` +
          'set listener.tls.cert and listener.tls.key (PEM files) to serve HTTPS, or listener.trusted_proxy ' +
          'to the address of the authenticating proxy in front of it',
      });
    }
  });

/** A platform's `*_env` key: the NAME of the variable holding a secret, never the secret. */
const envNameOr = (fallback: string) => envName.default(fallback);

const httpUrl = (fallback: string) =>
  z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).default(fallback);

/**
 * Telegram's webhook mode (docs/messaging.md, "Webhook mode"): Telegram posts updates to `url`, a
 * public HTTPS address whose proxy forwards to the listener on `host:port` (loopback only). Plain
 * http is accepted for a loopback url, which a self-hosted Bot API server can post to.
 */
const telegramWebhookSchema = z
  .strictObject({
    url: z.url({
      protocol: /^https?$/,
      error: (issue) =>
        issue.input === undefined
          ? 'is required: the public https URL Telegram posts updates to'
          : 'must be an https URL',
    }),
    secret_token_env: z
      .string({ error: 'is required: the NAME of the environment variable holding the webhook secret' })
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be the NAME of an environment variable' }),
    host: z
      .string()
      .refine(isLoopback, { error: 'must be a loopback address: put a TLS proxy in front of it' })
      .default('127.0.0.1'),
    port: z
      .number({ error: 'is required: the port the gateway listens on for the proxy (0 = any free port)' })
      .int({ error: 'must be a whole number' })
      .min(0, { error: 'must be a port number' })
      .max(65535, { error: 'must be a port number' }),
  })
  .superRefine((webhook, ctx) => {
    const url = new URL(webhook.url);
    if (url.protocol === 'http:' && !isLoopback(url.hostname.replace(/^\[|\]$/g, ''))) {
      ctx.addIssue({
        code: 'custom',
        path: ['url'],
        message:
          'must be https: Telegram posts only to https URLs (plain http is for a loopback Bot API server)',
      });
    }
  });

/**
 * A chat platform adapter (issue 6). The bot token is never written in the file: `token_env` names
 * the environment variable that holds it. Isolation options left out follow `sessions`.
 */
const telegramSchema = z
  .strictObject({
    enabled: z.boolean().default(true),
    token_env: envNameOr('TELEGRAM_BOT_TOKEN'),
    api_root: httpUrl('https://api.telegram.org'),
    allowed_user_ids: z
      .array(
        z.union([
          z.string().regex(/^\d+$/, { error: 'must be a numeric Telegram user id' }),
          z.number().int(),
        ]),
      )
      .transform((ids) => ids.map(String))
      .optional(),
    group_sessions_per_user: z.boolean().optional(),
    thread_sessions_per_user: z.boolean().optional(),
    /** CTX-2: hash user and chat ids in the prompt text. */
    redact_pii: z.boolean().default(false),
    /** How updates arrive: long polling (getUpdates) or a webhook Telegram posts to. */
    mode: z.enum(['polling', 'webhook'], { error: 'must be polling or webhook' }).default('polling'),
    webhook: telegramWebhookSchema.optional(),
    /** Photos, documents and voice notes larger than this are refused with a reply (Bot API: 20 MB). */
    max_attachment_mb: z
      .number({ error: 'must be a number of MB' })
      .positive({ error: 'must be more than 0' })
      .max(2000, { error: 'must be at most 2000 (a local Bot API server allows 2 GB)' })
      .default(20),
  })
  .superRefine((section, ctx) => {
    if (section.mode === 'webhook' && section.webhook === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['webhook'],
        message: 'mode: webhook needs a webhook section (url, secret_token_env, port)',
      });
    }
    if (section.mode === 'polling' && section.webhook !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['webhook'],
        message: 'is set but mode is polling (the default): set mode: webhook, or remove the webhook section',
      });
    }
  });

const snowflakes = (what: string) =>
  z
    .array(
      z.union([
        z.string().regex(/^\d+$/, { error: `must be a numeric Discord ${what} id` }),
        z.number().int(),
      ]),
    )
    .transform((ids) => ids.map(String))
    .optional();

/**
 * The Discord adapter (docs/messaging.md, "Discord"). Like Telegram, the token is read from the
 * variable `token_env` names. Discord ids are never redacted (CTX-2: the agent needs them for
 * `<@id>` mentions), so `redact_pii: true` is refused rather than ignored.
 */
const discordSchema = z.strictObject({
  enabled: z.boolean().default(true),
  token_env: envNameOr('DISCORD_BOT_TOKEN'),
  /** The REST API root (the gateway URL is asked of it, GET /gateway/bot). */
  api_root: httpUrl('https://discord.com/api'),
  allowed_user_ids: snowflakes('user'),
  /** A guild member holding one of these roles may talk to the agent (role_authorized). */
  allowed_role_ids: snowflakes('role'),
  /** Guild channels the bot answers in (a thread counts as its parent channel). Absent: all. */
  allowed_channel_ids: snowflakes('channel'),
  /** In guild channels and threads, answer only messages that mention the bot. */
  require_mention: z.boolean().default(true),
  /** Answer direct messages. */
  answer_dms: z.boolean().default(true),
  /** Register the chat commands as application (slash) commands at start. */
  register_commands: z.boolean().default(true),
  group_sessions_per_user: z.boolean().optional(),
  thread_sessions_per_user: z.boolean().optional(),
  redact_pii: z
    .literal(false, {
      error: 'Discord ids are never redacted (the agent needs them for mentions); remove redact_pii',
    })
    .default(false),
});

const slackIds = (what: string, pattern: RegExp, example: string) =>
  z.array(z.string().regex(pattern, { error: `must be a Slack ${what} id, like ${example}` })).optional();

/**
 * The Slack adapter in Socket Mode (docs/messaging.md, "Slack"): two secrets, each read from the
 * variable its `_env` key names: the bot token (xoxb-…) for the Web API and the app-level token
 * (xapp-…) that opens the socket.
 */
const slackSchema = z.strictObject({
  enabled: z.boolean().default(true),
  bot_token_env: envNameOr('SLACK_BOT_TOKEN'),
  app_token_env: envNameOr('SLACK_APP_TOKEN'),
  /** The Web API root (the socket's URL is asked of it, apps.connections.open). */
  api_root: httpUrl('https://slack.com/api'),
  allowed_user_ids: slackIds('user', /^[UW][A-Z0-9]+$/, 'U0123ABCD'),
  /** Channels the bot answers in (a thread counts as its channel; DMs are not channels). Absent: all. */
  allowed_channel_ids: slackIds('channel', /^[CG][A-Z0-9]+$/, 'C0123ABCD'),
  /** In channels and threads, answer only messages that mention the bot. */
  require_mention: z.boolean().default(true),
  /** Answer direct messages. */
  answer_dms: z.boolean().default(true),
  group_sessions_per_user: z.boolean().optional(),
  thread_sessions_per_user: z.boolean().optional(),
  /** CTX-2: hash user and chat ids in the prompt text. */
  redact_pii: z.boolean().default(false),
});

/**
 * The section of a platform a plugin registers (docs/messaging.md, "Platforms from
 * configuration"). The keys every platform shares are checked here; the platform's own keys pass
 * through to its factory, which checks them. Whether the name is a registered platform is known
 * only to the messaging service, which refuses an unknown one and names the known ones.
 */
const platformSectionSchema = z.looseObject({
  enabled: z.boolean().default(true),
  group_sessions_per_user: z.boolean().optional(),
  thread_sessions_per_user: z.boolean().optional(),
  redact_pii: z.boolean().default(false),
});

export type PlatformSection = z.output<typeof platformSectionSchema>;

const count = (what: string) =>
  z
    .number({ error: `${what} must be a number` })
    .int({ error: `${what} must be a whole number` })
    .min(0, {
      error: `${what} must be 0 or more`,
    });

/**
 * The agent cache (SPEC AGC-1..3, docs/agent-cache.md). `memory_high_mb`: `auto` derives the budget
 * from the cgroup (memory.high, then memory.max) or the machine's RAM; a number fixes it in MiB;
 * `0` or `off` disables the pressure sweep.
 */
const agentCacheSchema = z.strictObject({
  max_size: count('agent_cache.max_size').default(128),
  idle_ttl_s: seconds('agent_cache.idle_ttl_s').min(0).default(3600),
  memory_high_mb: z
    .union([z.literal('auto'), z.literal('off'), count('agent_cache.memory_high_mb')], {
      error: 'must be auto, off, or a number of MiB (0 = off)',
    })
    .default('auto'),
  max_evictions_per_pass: count('agent_cache.max_evictions_per_pass').default(16),
  protect_recent: count('agent_cache.protect_recent').default(8),
});
export type TelegramSection = z.output<typeof telegramSchema>;
export type DiscordSection = z.output<typeof discordSchema>;
export type SlackSection = z.output<typeof slackSchema>;

/** Checkpoints of sessions created with `checkpoints: true` (docs/checkpoints.md). */
const checkpointsSchema = z.strictObject({
  max_files: count('checkpoints.max_files').min(1).default(10_000),
  max_bytes: count('checkpoints.max_bytes')
    .min(1)
    .default(256 * 1024 * 1024),
  max_per_session: count('checkpoints.max_per_session').min(1).max(10_000).default(50),
});

export const configSchema = z
  .strictObject({
    profiles: z
      .array(z.string().regex(PROFILE_NAME, { error: 'profile names use letters, digits, _ and -' }))
      .min(1, { error: 'must list at least one profile' })
      .default(['default']),
    default_profile: z.string().optional(),
    model: modelSchema.optional(),
    /** Several named providers (config-providers.ts); the `model:` block is the one named `default`. */
    providers: providersSchema.optional(),
    default_provider: z.string().min(1).optional(),
    /** Launch options that come from the home (docs/launch.md). */
    skills: z.strictObject({ offer_available: z.boolean().default(false) }).prefault({}),
    listener: listenerSchema.prefault({}),
    /** The built-in demo model, used when no `model` is configured. */
    demo_model: z
      .strictObject({
        context_window: z.number().int().min(1024, { error: 'must be at least 1024 tokens' }).default(65_536),
      })
      .prefault({}),
    /** Context compression (SPEC LIN-1). */
    compression: z
      .strictObject({
        threshold: z
          .number()
          .gt(0, { error: 'must be above 0' })
          .max(1, { error: 'must be at most 1 (the whole window)' })
          .default(0.75),
        tail_tokens: z.number().int().min(0).default(2_000),
      })
      .prefault({}),
    approvals: z
      .strictObject({
        mode: z.enum(['manual', 'deny', 'off']).default('manual'),
        timeout_s: seconds('approvals.timeout_s').positive().default(300),
      })
      .prefault({}),
    dashboard: z
      .strictObject({
        password_hash: z
          .string()
          .startsWith('scrypt$', { error: 'must be a hash written by `gatehouse passwd`' })
          .optional(),
      })
      .prefault({}),
    legacy_token: z
      .strictObject({
        enabled: z.boolean().default(false),
        token: z.string().min(16, { error: 'must be at least 16 characters' }).optional(),
      })
      .prefault({}),
    limits: z
      .strictObject({
        max_concurrent_turns: z.number().int().min(1).max(1024).default(8),
        /** A turn's wall-clock limit from its first claim; past it it settles failed/turn_timeout. */
        turn_timeout_s: seconds('limits.turn_timeout_s')
          .min(1, { error: 'limits.turn_timeout_s must be at least 1 second' })
          .default(1800),
      })
      .prefault({}),
    /** REC-7 step resume after a crash (docs/crash-safety.md). */
    recovery: z
      .strictObject({
        /** A tool that was running at the crash: `unknown` (block until resolved) or `close` it honestly. */
        running_tool: z
          .enum(['unknown', 'close'], { error: 'recovery.running_tool must be unknown or close' })
          .default('unknown'),
        /** The consecutive crash of one turn that makes it unknown (1: every crash does). */
        max_resumes: wholeNumber('recovery.max_resumes', 1, 100).default(3),
        /** A started turn resumes by itself only within this many seconds of its start. */
        auto_continue_freshness_s: seconds('recovery.auto_continue_freshness_s').min(0).default(3600),
      })
      .prefault({}),
    drain_timeout_s: seconds('drain_timeout_s').min(0).default(30),
    logging: z
      .strictObject({
        max_size_mb: z
          .number({ error: 'must be a size in MiB' })
          .positive({ error: 'must be more than 0' })
          .max(1024)
          .default(10),
        keep_files: z.number().int().min(1).max(100).default(3),
      })
      .prefault({}),
    sessions: z
      .strictObject({
        group_sessions_per_user: z.boolean().default(true),
        thread_sessions_per_user: z.boolean().default(false),
        /** Routing entries not updated for this many days are pruned (transcripts kept); 0 = never. */
        max_age_days: count('sessions.max_age_days').default(0),
      })
      .prefault({}),
    agent_cache: agentCacheSchema.prefault({}),
    checkpoints: checkpointsSchema.prefault({}),
    /** Commands run on session lifecycle events, for every session (docs/hooks.md). */
    hooks: HOOKS_SCHEMA.prefault({}),
    housekeeping: z
      .strictObject({ interval_s: seconds('housekeeping.interval_s').min(1).default(60) })
      .prefault({}),
    /** Where sessions are stored (docs/storage.md): the profile's SQLite file, or PostgreSQL. */
    store: z
      .strictObject({
        kind: z.enum(['sqlite', 'postgres'], { error: 'must be sqlite or postgres' }).default('sqlite'),
        /** The environment variable holding the PostgreSQL URL; the URL itself is never in the file. */
        url_env: z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be an environment variable name' })
          .optional(),
        /**
         * SQLite's page cache per connection, in MiB (docs/storage.md): a bound on the memory the
         * cache fills as the database grows. Absent: 64 (SQLITE_CACHE_MIB).
         */
        sqlite_cache_mb: count('store.sqlite_cache_mb')
          .min(1, { error: 'store.sqlite_cache_mb must be at least 1' })
          .max(4096, { error: 'store.sqlite_cache_mb must be at most 4096' })
          .optional(),
      })
      .superRefine((store, ctx) => {
        if (store.kind === 'postgres' && store.url_env === undefined)
          ctx.addIssue({
            code: 'custom',
            path: ['url_env'],
            message:
              'is required with kind: postgres: name the environment variable that holds the URL, e.g. url_env: GATEHOUSE_PG_URL',
          });
        if (store.kind === 'sqlite' && store.url_env !== undefined)
          ctx.addIssue({ code: 'custom', path: ['url_env'], message: 'is only used with kind: postgres' });
        if (store.kind === 'postgres' && store.sqlite_cache_mb !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: ['sqlite_cache_mb'],
            message: 'is only used with kind: sqlite',
          });
      })
      .prefault({}),
    /** Several instances on one PostgreSQL database (docs/cluster.md): session leases and failover. */
    cluster: z
      .strictObject({
        enabled: z.boolean({ error: 'cluster.enabled must be true or false' }).default(false),
        /** Seconds a lease lasts without renewal: how long a dead instance's sessions wait for another. */
        lease_s: wholeNumber('cluster.lease_s', 2, 300).default(10),
        /** How `gatehouse status` names this instance among the others (its id is random per start). */
        instance_name: z
          .string()
          .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, {
            error: 'cluster.instance_name must be 1 to 63 letters, digits, dots, dashes or underscores',
          })
          .optional(),
      })
      .prefault({}),
    events: z
      .strictObject({
        replay_max_events: count('events.replay_max_events').min(1).default(2048),
        replay_max_bytes: count('events.replay_max_bytes').min(1024).default(262_144),
      })
      .prefault({}),
    platforms: z
      .object({
        telegram: telegramSchema.optional(),
        discord: discordSchema.optional(),
        slack: slackSchema.optional(),
      })
      .catchall(platformSectionSchema)
      .prefault({}),
    /** The isolated worker of `safe_mode` sessions (docs/tools.md, "Safe mode"). */
    safe_mode: z
      .strictObject({
        memory_mb: count('safe_mode.memory_mb').min(16).default(2048),
        cpu_s: count('safe_mode.cpu_s').min(1).default(600),
        open_files: count('safe_mode.open_files').min(16).default(1024),
        processes: count('safe_mode.processes').min(4).default(256),
        idle_s: seconds('safe_mode.idle_s').min(1).default(60),
        env: z
          .array(
            z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be environment variable names' }),
          )
          .default([]),
      })
      .prefault({}),
  })
  .transform((config, ctx) => {
    const defaultProfile = config.default_profile ?? config.profiles[0]!;
    if (!config.profiles.includes(defaultProfile)) {
      ctx.addIssue({
        code: 'custom',
        path: ['default_profile'],
        message: `"${defaultProfile}" is not listed in profiles`,
      });
    }
    checkProviders(config, (path, message) => ctx.addIssue({ code: 'custom', path, message }));
    if (config.cluster.enabled && config.store.kind !== 'postgres') {
      ctx.addIssue({
        code: 'custom',
        path: ['cluster', 'enabled'],
        message:
          'needs store.kind: postgres (several instances share one PostgreSQL database; SQLite is the file of one process)',
      });
    }
    return { ...config, default_profile: defaultProfile };
  });

export type GatehouseConfig = z.output<typeof configSchema>;

export interface LoadedConfig {
  readonly config: GatehouseConfig;
  readonly file: string;
  /** Things the user should know but that do not stop the daemon (ignored keys, inline secrets). */
  readonly notices: readonly string[];
}

export { DEFAULT_PORT } from './default-port.js';

/** `serve --port/--host` (and `start`): command-line values win over listener.port/host. */
export function withListenerFlags(
  loaded: LoadedConfig,
  flags: { port?: string; host?: string },
): LoadedConfig {
  if (flags.port === undefined && flags.host === undefined) return loaded;
  const listener = { ...loaded.config.listener };
  if (flags.port !== undefined) {
    const port = Number(flags.port);
    if (!/^\d+$/.test(flags.port) || port > 65535) {
      throw new DaemonError(
        'invalid_input',
        `--port must be a port number from 0 to 65535 (0 = any free port), got ${flags.port}`,
      );
    }
    listener.port = port;
  }
  if (flags.host !== undefined) {
    if (!listener.allow_remote && !isLoopback(flags.host)) {
      throw new DaemonError(
        'invalid_input',
        `--host ${flags.host} is not a loopback address: use 127.0.0.1, or set listener.allow_remote: true in ${loaded.file} (only behind TLS or an authenticating proxy)`,
      );
    }
    listener.host = flags.host;
  }
  return { ...loaded, config: { ...loaded.config, listener } };
}

export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
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
  const result = configSchema.safeParse(cleaned);
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
      } else {
        kept[key] = value;
      }
    }
    return kept;
  };
  const cleaned = strip(raw, '');
  const sessions = cleaned['sessions'];
  if (sessions && typeof sessions === 'object' && !Array.isArray(sessions)) {
    cleaned['sessions'] = strip(sessions as Record<string, unknown>, 'sessions.');
  }
  return { cleaned, notices };
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((key) => (path ? `${path}.${key}` : key));
    return `${keys.join(', ')}: unknown key${keys.length > 1 ? 's' : ''}`;
  }
  return `${path || '(top level)'}: ${issue.message}`;
}

const MASK = '***';

/** A copy safe to print or log: every secret value replaced, its presence still visible. */
export function maskConfig(config: GatehouseConfig): GatehouseConfig {
  const copy = structuredClone(config);
  if (copy.model?.api_key !== undefined) copy.model.api_key = MASK;
  if (copy.dashboard.password_hash !== undefined) copy.dashboard.password_hash = MASK;
  if (copy.legacy_token.token !== undefined) copy.legacy_token.token = MASK;
  for (const section of Object.values(copy.platforms) as Record<string, unknown>[]) {
    for (const key of Object.keys(section)) if (isSecretKey(key)) section[key] = MASK;
  }
  return copy;
}

/**
 * A platform section (a plugin's own fields included) names its secrets by convention: a key that
 * says token, secret, password or api_key holds one inline (warned against, as for the model), and a
 * key ending in `_env` names the environment variable that holds one.
 */
const SECRET_KEY = /(token|secret|password|api_key)$/i;

function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) && !key.endsWith('_env');
}

/** Secret values in the config or the environment it names; loggers scrub these from every line. */
export function configSecrets(config: GatehouseConfig, env: NodeJS.ProcessEnv = process.env): string[] {
  const secrets = [config.model?.api_key, config.legacy_token.token];
  if (config.model?.api_key_env) secrets.push(env[config.model.api_key_env]);
  for (const provider of Object.values(config.providers ?? {}))
    if (provider.api_key_env) secrets.push(env[provider.api_key_env]);
  // Nested sections too (platforms.telegram.webhook.secret_token_env).
  const walk = (section: Record<string, unknown>): void => {
    for (const [key, value] of Object.entries(section)) {
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
        walk(value as Record<string, unknown>);
      } else if (typeof value !== 'string') continue;
      else if (key.endsWith('_env')) secrets.push(env[value]);
      else if (isSecretKey(key)) secrets.push(value);
    }
  };
  for (const section of Object.values(config.platforms) as Record<string, unknown>[]) walk(section);
  return secrets.filter((value): value is string => typeof value === 'string' && value.length >= 4);
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
