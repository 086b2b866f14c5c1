/**
 * The `platforms` section: one block per chat platform adapter (Telegram, Discord, Slack) and the
 * shared keys of a platform a plugin registers. Tokens are never written here: each `*_env` key
 * names the environment variable that holds one (config-secrets.ts keeps them out of logs).
 */
import { z } from 'zod';
import { envName } from './config-providers.js';
import { isLoopback } from './config-listener.js';
import type { HomeChannel } from '../domain/session/context.js';
import type { ChatMembers, MappedPrincipal } from '../domain/auth/chat-members.js';

/** A platform's `*_env` key: the NAME of the variable holding a secret, never the secret. */
const envNameOr = (fallback: string) => envName.default(fallback);

const httpUrl = (fallback: string) =>
  z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).default(fallback);

const MEMBER_SUBJECT = /^member:[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$/;
const OPERATOR_SUBJECTS = ['native:owner', 'dashboard:owner'];
const PRINCIPAL_HELP =
  'must be a principal: member:<name>, native:owner, dashboard:owner, or { principal: "oidc:<issuer>#<sub>", role: operator|member }';

/** A principal a chat user is mapped to, with its role (issue 30, docs/identity.md "Chat platforms"). */
const mappedPrincipalSchema = z
  .union(
    [
      z
        .string()
        .transform((subject) => ({ subject: subject.trim(), role: null as 'operator' | 'member' | null })),
      z
        .strictObject({
          principal: z.string(),
          role: z.enum(['operator', 'member'], { error: 'must be operator or member' }),
        })
        .transform((entry) => ({
          subject: entry.principal.trim(),
          role: entry.role as 'operator' | 'member' | null,
        })),
    ],
    { error: PRINCIPAL_HELP },
  )
  .transform((entry, ctx) => {
    const inferred = MEMBER_SUBJECT.test(entry.subject)
      ? 'member'
      : OPERATOR_SUBJECTS.includes(entry.subject)
        ? 'operator'
        : null;
    if (inferred === null && !/^oidc:\S+#\S+$/.test(entry.subject)) {
      ctx.addIssue({ code: 'custom', message: PRINCIPAL_HELP });
      return z.NEVER;
    }
    const role = entry.role ?? inferred;
    if (role === null) {
      ctx.addIssue({
        code: 'custom',
        message: `${entry.subject}: an oidc principal's role is decided at sign-in; write { principal: "${entry.subject}", role: operator|member }`,
      });
      return z.NEVER;
    }
    if (inferred !== null && role !== inferred) {
      ctx.addIssue({
        code: 'custom',
        message: `${entry.subject} is ${inferred === 'member' ? 'a member' : 'an operator'}, not ${role === 'member' ? 'a member' : 'an operator'}`,
      });
      return z.NEVER;
    }
    return { subject: entry.subject, role };
  });

/** `during_turn:` (issue 28): what a message sent while a turn runs is. */
const duringTurn = z
  .enum(['queue', 'steer'], { error: 'must be queue (the next turn) or steer (applied to the running turn)' })
  .default('queue');

/**
 * `members:` of a platform section: platform user id → the principal that person is on the
 * dashboard and the API. `id`: the platform's user id spelling.
 */
const membersOf = (id: RegExp, what: string) =>
  z
    .record(z.string(), mappedPrincipalSchema)
    .superRefine((members, ctx) => {
      for (const user of Object.keys(members))
        if (!id.test(user))
          ctx.addIssue({ code: 'custom', path: [user], message: `must be keyed by ${what}` });
    })
    .optional();

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
    /** Issue 30: Telegram user id → principal. */
    members: membersOf(/^\d+$/, 'a numeric Telegram user id'),
    /** Issue 28: a message sent during a turn waits as the next turn, or steers the running one. */
    during_turn: duringTurn,
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
  /** Issue 30: Discord user id → principal. */
  members: membersOf(/^\d+$/, 'a numeric Discord user id'),
  /** Issue 28: a message sent during a turn waits as the next turn, or steers the running one. */
  during_turn: duringTurn,
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
  /** Issue 30: Slack user id → principal. */
  members: membersOf(/^[UW][A-Z0-9]+$/, 'a Slack user id, like U0123ABCD'),
  /** Issue 28: a message sent during a turn waits as the next turn, or steers the running one. */
  during_turn: duringTurn,
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
  /** Issue 30: the platform's user id (no spaces) → principal. */
  members: membersOf(/^\S+$/, 'a user id (no spaces)'),
  /** Issue 28: a message sent during a turn waits as the next turn, or steers the running one. */
  during_turn: duringTurn,
});

export type PlatformSection = z.output<typeof platformSectionSchema>;
export type TelegramSection = z.output<typeof telegramSchema>;
export type DiscordSection = z.output<typeof discordSchema>;
export type SlackSection = z.output<typeof slackSchema>;

/** Telegram, Discord and Slack by their blocks; any other name is a plugin's platform section. */
export const platformsSchema = z
  .object({
    telegram: telegramSchema.optional(),
    discord: discordSchema.optional(),
    slack: slackSchema.optional(),
  })
  .catchall(platformSectionSchema)
  .prefault({});

/**
 * `home_channels:` (SPEC CTX-1, docs/scheduling.md "Home channels"): per platform, the chat where
 * scheduled output goes. A chat id alone, or `{ chat_id, name }`; the name is only shown to the agent.
 */
const homeChannelSchema = z.union(
  [
    z
      .union([z.string(), z.number().int()])
      .transform((id) => ({ chat_id: String(id).trim(), name: null as string | null })),
    z
      .strictObject({
        chat_id: z.union([z.string(), z.number().int()]).transform((id) => String(id).trim()),
        name: z.string().trim().min(1, { error: 'must not be empty' }).max(100).optional(),
      })
      .transform((home) => ({ chat_id: home.chat_id, name: home.name ?? null })),
  ],
  { error: 'must be a chat id, or { chat_id, name }' },
);

export const homeChannelsSchema = z
  .record(
    z.string(),
    homeChannelSchema.refine((home) => home.chat_id !== '' && !/[\s\0]/.test(home.chat_id), {
      error: 'must be a chat id (no spaces)',
    }),
  )
  .default({});

export type HomeChannels = z.output<typeof homeChannelsSchema>;

/** A home channel on a platform that is not enabled would never be delivered to: refused. */
export function checkHomeChannels(
  homes: HomeChannels,
  platforms: Record<string, { enabled: boolean } | undefined>,
  issue: (path: (string | number)[], message: string) => void,
): void {
  const enabled = Object.entries(platforms)
    .filter(([, section]) => section?.enabled === true)
    .map(([name]) => name);
  for (const platform of Object.keys(homes)) {
    if (!enabled.includes(platform)) {
      issue(
        ['home_channels', platform],
        `names platform "${platform}", which is not enabled under platforms: ` +
          (enabled.length === 0 ? 'no platform is' : `enabled: ${enabled.join(', ')}`),
      );
    }
  }
}

/** The configured home channels as the session context shows them (CTX-1). */
export function homeChannelsOf(config: { home_channels: HomeChannels }): HomeChannel[] {
  return Object.entries(config.home_channels).map(([platform, home]) => ({
    platform,
    chat_id: home.chat_id,
    chat_name: home.name,
  }));
}

/** Each platform's `members` mapping (issue 30), as the engines read it: by platform name. */
export function chatMembersOf(platforms: Record<string, PlatformSection | undefined>): ChatMembers {
  const maps = new Map<string, ReadonlyMap<string, MappedPrincipal>>();
  for (const [name, section] of Object.entries(platforms))
    if (section?.members !== undefined) maps.set(name, new Map(Object.entries(section.members)));
  return (platform) => maps.get(platform);
}
