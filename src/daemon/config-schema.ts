/**
 * The closed zod schema of the YAML configuration: it gives every key its default and its check,
 * so an unknown or malformed key is reported with its path instead of being ignored. Keys are
 * snake_case, as in the file. The listener, platform and provider sections have their own files;
 * loading and error messages are config.ts's.
 */
import { z } from 'zod';
import { APPROVAL_MODE_ALIASES, APPROVAL_MODES, type ApprovalMode } from '../runtime/approvals/decide.js';
import { HOOKS_SCHEMA } from '../runtime/hooks/config.js';
import { MCP_SERVERS_SCHEMA } from '../runtime/mcp/config.js';
import { apiServerSchema } from './config-api-server.js';
import { authSchema } from './config-auth.js';
import { listenerSchema } from './config-listener.js';
import { metricsSchema, pricingSchema, telemetrySchema } from './config-observability.js';
import { budgetsSchema } from './config-budgets.js';
import { checkHomeChannels, homeChannelsSchema, platformsSchema } from './config-platforms.js';
import {
  apiBaseUrl,
  checkMemberProviders,
  checkProviders,
  contextWindow,
  envName,
  providersSchema,
  REASONING_FORMATS,
} from './config-providers.js';

/** A variable a tool may be given: an environment name, not one of the gateway's own. */
const toolEnvName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be environment variable names' })
  .refine((name) => !name.toUpperCase().startsWith('GATEHOUSE_'), {
    error: "GATEHOUSE_ variables are the gateway's own and are never given to tools",
  });

const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

const seconds = (what: string) =>
  z.number({ error: `${what} must be a number of seconds` }).int({ error: `${what} must be a whole number` });

/** A whole number in [min, max], every failure said in one sentence naming the key. */
const wholeNumber = (what: string, min: number, max: number) => {
  const error = `${what} must be a whole number from ${min} to ${max}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
};

const count = (what: string) =>
  z
    .number({ error: `${what} must be a number` })
    .int({ error: `${what} must be a whole number` })
    .min(0, {
      error: `${what} must be 0 or more`,
    });

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
        /** docs/approvals.md; `manual` is the former name of `default`. */
        mode: z
          .enum([...APPROVAL_MODES, ...(Object.keys(APPROVAL_MODE_ALIASES) as ['manual'])])
          .default('default')
          .transform((mode): ApprovalMode => APPROVAL_MODE_ALIASES[mode] ?? (mode as ApprovalMode)),
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
      // Enabled without a token would leave the path off while the file says on.
      .refine((legacy) => !legacy.enabled || legacy.token !== undefined, {
        error:
          'enabled is true but no token is set: add legacy_token.token (16+ characters) or set enabled: false',
      })
      .prefault({}),
    limits: z
      .strictObject({
        max_concurrent_turns: z.number().int().min(1).max(1024).default(8),
        /** A turn's wall-clock limit from its first claim; past it it settles failed/turn_timeout. */
        turn_timeout_s: seconds('limits.turn_timeout_s')
          .min(1, { error: 'limits.turn_timeout_s must be at least 1 second' })
          .default(1800),
        /** Bytes of env and header values of one session's own MCP servers held in memory. */
        mcp_values_max_bytes: wholeNumber('limits.mcp_values_max_bytes', 1024, 16 * 1024 * 1024).default(
          64 * 1024,
        ),
        /** Bytes of those values held for all sessions together. */
        mcp_values_total_max_bytes: wholeNumber(
          'limits.mcp_values_total_max_bytes',
          1024,
          1024 * 1024 * 1024,
        ).default(16 * 1024 * 1024),
      })
      .prefault({}),
    /** Background delegations (docs/scheduling.md, "Background delegations"). */
    delegations: z
      .strictObject({
        /** How deep delegations may nest: 1, a session's children may not delegate themselves. */
        max_depth: wholeNumber('delegations.max_depth', 1, 10).default(2),
        /** Delegations of one session not yet ended (starting or running) at once. */
        max_per_session: wholeNumber('delegations.max_per_session', 1, 100).default(4),
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
    /** The Prometheus endpoint `/metrics` (docs/observability.md). */
    metrics: metricsSchema,
    /** OpenTelemetry traces of turns over OTLP/HTTP (docs/observability.md, "Traces"). */
    telemetry: telemetrySchema,
    /** Model prices per provider and model, over the built-in list (docs/cost.md). */
    pricing: pricingSchema,
    /** What sessions, principals and the gateway may spend (docs/cost.md, "Budgets"); absent: no limit. */
    budgets: budgetsSchema,
    /** The OpenAI-compatible endpoint `/v1/chat/completions` (docs/integrations.md); absent: off. */
    api_server: apiServerSchema,
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
    platforms: platformsSchema,
    /** Per platform, the chat scheduled output goes to (docs/scheduling.md, "Home channels"). */
    home_channels: homeChannelsSchema,
    /** Members' launch limits and the audit trail (docs/identity.md). */
    auth: authSchema,
    /**
     * What tool processes get besides the allow-listed environment (docs/tool-reach.md): names
     * passed on from the daemon's environment, and fixed values. Never the gateway's own names.
     */
    tools: z
      .strictObject({
        env_passthrough: z.array(toolEnvName).default([]),
        env: z
          .record(
            toolEnvName,
            z.string().refine((v) => !v.includes('\0'), { error: 'must not contain NUL characters' }),
          )
          .default({}),
      })
      .prefault({}),
    /** MCP servers whose tools join the profile's sessions (docs/integrations.md). */
    mcp_servers: MCP_SERVERS_SCHEMA.default({}),
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
    // A gateway serves one profile (docs/decisions.md, issue 26 item 9): a second listed here would
    // be accepted and never served.
    if (config.profiles.length > 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['profiles'],
        message: `lists ${config.profiles.length} profiles (${config.profiles.join(', ')}), but a gateway serves one: keep one here, and run each other profile as a gateway of its own (its own GATEHOUSE_HOME)`,
      });
    }
    const defaultProfile = config.default_profile ?? config.profiles[0]!;
    if (!config.profiles.includes(defaultProfile)) {
      ctx.addIssue({
        code: 'custom',
        path: ['default_profile'],
        message: `"${defaultProfile}" is not listed in profiles`,
      });
    }
    checkHomeChannels(config.home_channels, config.platforms, (path, message) =>
      ctx.addIssue({ code: 'custom', path, message }),
    );
    checkProviders(config, (path, message) => ctx.addIssue({ code: 'custom', path, message }));
    checkMemberProviders(config, (path, message) => ctx.addIssue({ code: 'custom', path, message }));
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
