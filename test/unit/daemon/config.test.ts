import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeModel, DEMO_MODEL_DESCRIPTION, parseConfig } from '../../../src/daemon/config.js';
import { configSecrets, maskConfig } from '../../../src/daemon/config-secrets.js';
import { DEFAULT_CONFIG_YAML } from '../../../src/daemon/home.js';
import { DaemonError } from '../../../src/daemon/errors.js';

const FILE = '/home/me/.gatehouse/config.yaml';

function failure(text: string): DaemonError {
  try {
    parseConfig(text, FILE);
  } catch (error) {
    expect(error).toBeInstanceOf(DaemonError);
    return error as DaemonError;
  }
  throw new Error('expected the config to be refused');
}

describe('UX-3 configuration: defaults', () => {
  it('an empty file means every default, with the demo model', () => {
    const { config, notices } = parseConfig('', FILE);
    expect(config.profiles).toEqual(['default']);
    expect(config.default_profile).toBe('default');
    expect(config.model).toBeUndefined();
    expect(config.listener).toEqual({ host: '127.0.0.1', allow_remote: false, max_connections: 512 });
    expect(config.tools).toEqual({ env_passthrough: [], env: {} });
    expect(config.approvals).toEqual({ mode: 'default', timeout_s: 300 });
    expect(config.legacy_token.enabled).toBe(false);
    expect(config.limits.max_concurrent_turns).toBe(8);
    expect(config.drain_timeout_s).toBe(30);
    expect(config.sessions).toEqual({
      group_sessions_per_user: true,
      thread_sessions_per_user: false,
      max_age_days: 0,
    });
    expect(config.agent_cache).toEqual({
      max_size: 128,
      idle_ttl_s: 3600,
      memory_high_mb: 'auto',
      max_evictions_per_pass: 16,
      protect_recent: 8,
    });
    expect(config.housekeeping).toEqual({ interval_s: 60 });
    expect(config.events).toEqual({ replay_max_events: 2048, replay_max_bytes: 262_144 });
    expect(notices).toEqual([]);
    expect(describeModel(config)).toBe(DEMO_MODEL_DESCRIPTION);
  });

  it('the commented default file written by initHome is valid and equals the defaults', () => {
    expect(parseConfig(DEFAULT_CONFIG_YAML, FILE).config).toEqual(parseConfig('', FILE).config);
  });

  it('REC-7 recovery.* and limits.turn_timeout_s: defaults, values, and refusals that name the key', () => {
    const { config } = parseConfig('', FILE);
    expect(config.recovery).toEqual({
      running_tool: 'unknown',
      max_resumes: 3,
      auto_continue_freshness_s: 3600,
    });
    expect(config.limits.turn_timeout_s).toBe(1800);
    const set = parseConfig(
      'recovery: {running_tool: close, max_resumes: 1}\nlimits: {turn_timeout_s: 5}',
      FILE,
    );
    expect(set.config.recovery).toMatchObject({ running_tool: 'close', max_resumes: 1 });
    expect(set.config.limits.turn_timeout_s).toBe(5);
    expect(failure('recovery: {running_tool: retry}').message).toMatch(
      /recovery.running_tool must be unknown or close/,
    );
    expect(failure('recovery: {max_resumes: 0}').message).toMatch(
      /recovery.max_resumes must be a whole number from 1 to 100/,
    );
    expect(failure('limits: {turn_timeout_s: 0}').message).toMatch(
      /limits.turn_timeout_s must be at least 1 second/,
    );
  });

  it('agent_cache.memory_high_mb takes auto, off, 0 or a number of MiB', () => {
    const of = (v: string) => parseConfig(`agent_cache: {memory_high_mb: ${v}}`, FILE).config.agent_cache;
    expect(of('auto').memory_high_mb).toBe('auto');
    expect(of('off').memory_high_mb).toBe('off');
    expect(of('0').memory_high_mb).toBe(0);
    expect(of('2048').memory_high_mb).toBe(2048);
  });

  it('a configured provider is described by model and URL', () => {
    const { config } = parseConfig(
      'model: {base_url: "https://api.example.com/v1", model: m-1, api_key_env: EXAMPLE_KEY}',
      FILE,
    );
    expect(describeModel(config)).toBe('m-1 at https://api.example.com/v1');
  });
});

describe('UX-3 configuration: a bad value is named with its file and key path', () => {
  it.each([
    ['listener: {port: "abc"}', 'listener.port'],
    ['listener: {port: 70000}', 'listener.port'],
    ['listener: {host: 0.0.0.0}', 'listener.host'],
    ['listner: {port: 1}', 'listner'],
    ['approvals: {mode: sometimes}', 'approvals.mode'],
    ['model: {base_url: "https://user:pw@x.test/v1", model: m}', 'model.base_url'],
    ['model: {base_url: "https://x.test/v1", model: m, api_key_env: "sk-not-a-name"}', 'model.api_key_env'],
    ['profiles: [a]\ndefault_profile: c', 'default_profile'],
    ['profiles: [default, work]', 'profiles'],
    ['profiles: ["../escape"]', 'profiles.0'],
    ['drain_timeout_s: -1', 'drain_timeout_s'],
    ['agent_cache: {memory_high_mb: lots}', 'agent_cache.memory_high_mb'],
    ['agent_cache: {max_size: -1}', 'agent_cache.max_size'],
    ['sessions: {max_age_days: 1.5}', 'sessions.max_age_days'],
    ['listener: {max_connections: 3}', 'listener.max_connections'],
    ['tools: {env_passthrough: ["not a name"]}', 'tools.env_passthrough.0'],
    ['tools: {env_passthrough: [GATEHOUSE_HOME]}', 'tools.env_passthrough.0'],
    ['tools: {env: {GATEHOUSE_X: y}}', 'tools.env.GATEHOUSE_X'],
    ['tools: {env: {EDITOR: 3}}', 'tools.env.EDITOR'],
    ['tools: {env_pass: [A]}', 'tools.env_pass'],
  ])('%s → %s', (text, path) => {
    const error = failure(text);
    expect(error.code).toBe('config_invalid');
    expect(error.message).toContain(FILE);
    expect(error.message).toContain(`${path}:`);
    expect(error.message).not.toContain('\n');
  });

  it('a base_url that is not a URL is a config error saying what a URL looks like; a missing one is required', () => {
    const bad = failure('model: {base_url: notaurl, model: m}');
    expect(bad.message).toBe(
      `${FILE}: model.base_url: must be an http(s) URL like https://api.openai.com/v1, got "notaurl" (see docs/configuration.md)`,
    );
    const missing = failure('model: {model: m}');
    expect(missing.message).toContain('model.base_url: required');
  });

  it('broken YAML names the file and the line', () => {
    const error = failure('listener:\n  port: [1\n');
    expect(error.message).toMatch(/config\.yaml line \d+: not valid YAML/);
  });

  it('AUTH-6 a remote host needs allow_remote and then TLS or an authenticating proxy', () => {
    const bare = failure('listener: {host: 0.0.0.0, allow_remote: true}');
    expect(bare.message).toContain('listener.allow_remote:');
    expect(bare.message).toContain('listener.tls.cert and listener.tls.key');
    expect(bare.message).toContain('listener.trusted_proxy');
    const tls = parseConfig(
      'listener: {host: 0.0.0.0, allow_remote: true, tls: {cert: c.pem, key: k.pem}}',
      FILE,
    );
    expect(tls.config.listener.host).toBe('0.0.0.0');
    const proxied = parseConfig(
      'listener: {host: 0.0.0.0, allow_remote: true, trusted_proxy: 10.0.0.5}',
      FILE,
    );
    expect(proxied.config.listener.trusted_proxy).toEqual(['10.0.0.5']);
    expect(
      failure('listener: {host: 0.0.0.0, allow_remote: true, trusted_proxy: proxy.lan}').message,
    ).toContain('listener.trusted_proxy: must be the IP address of the proxy');
    // Loopback needs neither: nothing leaves the machine.
    expect(parseConfig('listener: {allow_remote: true}', FILE).config.listener.allow_remote).toBe(true);
  });
});

describe('ENT-2 old timer settings are accepted and ignored with a notice', () => {
  it('at the top level and under sessions', () => {
    const { config, notices } = parseConfig(
      'idle_minutes: 60\ndaily_reset_hour: 4\nsessions:\n  reset_policy: daily\n  group_sessions_per_user: false\n',
      FILE,
    );
    expect(config.sessions.group_sessions_per_user).toBe(false);
    expect(config).not.toHaveProperty('idle_minutes');
    expect(notices).toHaveLength(3);
    expect(notices.join('\n')).toMatch(/idle_minutes is ignored/);
    expect(notices.join('\n')).toMatch(/sessions\.reset_policy is ignored/);
  });

  it('under a platform section too: one rule everywhere, never a refusal', () => {
    const { config, notices } = parseConfig(
      'platforms:\n  telegram: {token_env: TG_TOKEN, idle_minutes: 30, reset_mode: daily}\n',
      FILE,
    );
    expect(config.platforms.telegram).not.toHaveProperty('idle_minutes');
    expect(notices).toEqual([
      expect.stringMatching(/^platforms\.telegram\.idle_minutes is ignored/),
      expect.stringMatching(/^platforms\.telegram\.reset_mode is ignored/),
    ]);
  });
});

describe('legacy_token', () => {
  it('enabled without a token is refused, naming the key', () => {
    expect(failure('legacy_token: {enabled: true}').message).toContain(
      'legacy_token: enabled is true but no token is set',
    );
    expect(parseConfig('legacy_token: {enabled: false}', FILE).config.legacy_token.enabled).toBe(false);
  });
});

describe('UX-3 configuration: secrets', () => {
  const text = [
    'model: {base_url: "https://x.test/v1", model: m, api_key: sk-inline-secret-1234, api_key_env: MY_KEY}',
    'dashboard: {password_hash: "scrypt$1$2$3$salt$hash"}',
    'legacy_token: {enabled: true, token: legacy-token-0123456789}',
  ].join('\n');

  it('an inline api_key is accepted but warned about', () => {
    const { notices } = parseConfig(text, FILE);
    expect(notices.join('\n')).toMatch(/model\.api_key is written inline/);
  });

  it('maskConfig hides every secret value and keeps everything else', () => {
    const { config } = parseConfig(text, FILE);
    const masked = maskConfig(config);
    const shown = JSON.stringify(masked);
    expect(shown).not.toContain('sk-inline-secret-1234');
    expect(shown).not.toContain('scrypt$');
    expect(shown).not.toContain('legacy-token-0123456789');
    expect(masked.model?.api_key_env).toBe('MY_KEY');
    expect(masked.model?.base_url).toBe('https://x.test/v1');
    expect(config.model?.api_key).toBe('sk-inline-secret-1234'); // the original is untouched
  });

  it("a plugin platform's secrets are masked and scrubbed by the naming convention", () => {
    const { config } = parseConfig(
      [
        'platforms:',
        '  telegram: {token_env: TG_TOKEN}',
        '  matrix: {homeserver: "https://m.test", access_token: mx-inline-0001, password_env: MX_PASS}',
      ].join('\n'),
      FILE,
    );
    const shown = JSON.stringify(maskConfig(config));
    expect(shown).not.toContain('mx-inline-0001');
    expect(shown).toContain('MX_PASS'); // the variable's name is not a secret
    expect(shown).toContain('https://m.test');
    const env = { TG_TOKEN: '123:telegram-token', MX_PASS: 'matrix-password-9', OTHER: 'not-named' };
    expect(configSecrets(config, env).sort()).toEqual(
      ['123:telegram-token', 'matrix-password-9', 'mx-inline-0001'].sort(),
    );
  });

  it('configSecrets lists inline secrets and the value of the named environment variable', () => {
    const { config } = parseConfig(text, FILE);
    expect(configSecrets(config, { MY_KEY: 'sk-from-env-5678' }).sort()).toEqual(
      ['legacy-token-0123456789', 'sk-from-env-5678', 'sk-inline-secret-1234'].sort(),
    );
  });
});

describe('platforms.telegram: webhook mode and attachments', () => {
  const telegram = (lines: string[]) =>
    ['platforms:', '  telegram:', ...lines.map((l) => `    ${l}`)].join('\n');
  const webhook = [
    'mode: webhook',
    'webhook:',
    '  url: https://bot.example.com/tg',
    '  secret_token_env: TG_SECRET',
    '  port: 8443',
  ];

  it('defaults to polling with a 20 MB attachment limit', () => {
    const section = parseConfig(telegram(['token_env: TG']), FILE).config.platforms.telegram!;
    expect(section.mode).toBe('polling');
    expect(section.webhook).toBeUndefined();
    expect(section.max_attachment_mb).toBe(20);
  });

  it('takes a webhook section with mode: webhook, listening on loopback by default', () => {
    const section = parseConfig(telegram(webhook), FILE).config.platforms.telegram!;
    expect(section.webhook).toEqual({
      url: 'https://bot.example.com/tg',
      secret_token_env: 'TG_SECRET',
      host: '127.0.0.1',
      port: 8443,
    });
  });

  it.each([
    [['mode: webhook'], 'platforms.telegram.webhook: mode: webhook needs a webhook section'],
    [webhook.slice(1), 'platforms.telegram.webhook: is set but mode is polling'],
    [
      [...webhook.slice(0, 2), '  url: http://bot.example.com/tg', ...webhook.slice(3)],
      'platforms.telegram.webhook.url: must be https',
    ],
    [[...webhook, '  host: 0.0.0.0'], 'platforms.telegram.webhook.host: must be a loopback address'],
    [webhook.slice(0, 4), 'platforms.telegram.webhook.port: is required'],
    [
      [...webhook.slice(0, 3), ...webhook.slice(4)],
      'platforms.telegram.webhook.secret_token_env: is required',
    ],
    [[...webhook, '  path: /x'], 'path'],
    [['max_attachment_mb: 0'], 'platforms.telegram.max_attachment_mb: must be more than 0'],
    [['mode: push'], 'platforms.telegram.mode: must be polling or webhook'],
  ])('refuses %j, naming the key', (lines, message) => {
    expect(failure(telegram(lines)).message).toContain(message);
  });

  it('accepts plain http for a loopback URL (a self-hosted Bot API server posts there)', () => {
    const lines = [...webhook.slice(0, 2), '  url: http://127.0.0.1:9000/tg', ...webhook.slice(3)];
    expect(parseConfig(telegram(lines), FILE).config.platforms.telegram!.webhook!.url).toBe(
      'http://127.0.0.1:9000/tg',
    );
  });

  it('scrubs the webhook secret named in the nested section', () => {
    const { config } = parseConfig(telegram(['token_env: TG', ...webhook]), FILE);
    expect(configSecrets(config, { TG: '123:tok', TG_SECRET: 'the-webhook-secret' }).sort()).toEqual(
      ['123:tok', 'the-webhook-secret'].sort(),
    );
  });
});

describe('store.sqlite_cache_mb', () => {
  it('is absent by default (the store uses 64 MiB) and takes a number of MiB', () => {
    expect(parseConfig('', FILE).config.store.sqlite_cache_mb).toBeUndefined();
    expect(parseConfig('store:\n  sqlite_cache_mb: 8\n', FILE).config.store.sqlite_cache_mb).toBe(8);
  });

  it.each([
    ['sqlite_cache_mb: 0', 'store.sqlite_cache_mb must be at least 1'],
    ['sqlite_cache_mb: 1.5', 'store.sqlite_cache_mb must be a whole number'],
    ['sqlite_cache_mb: lots', 'store.sqlite_cache_mb must be a number'],
    ['sqlite_cache_mb: 5000', 'store.sqlite_cache_mb must be at most 4096'],
    [
      'kind: postgres\n  url_env: PG\n  sqlite_cache_mb: 8',
      'sqlite_cache_mb: is only used with kind: sqlite',
    ],
  ])('refuses %j, naming the key', (line, message) => {
    expect(failure(`store:\n  ${line}\n`).message).toContain(message);
  });
});

describe('approvals.mode', () => {
  it.each([
    ['default', 'default'],
    ['detect', 'detect'],
    ['deny', 'deny'],
    ['off', 'off'],
    ['manual', 'default'],
  ])('%s is read as %s', (written, read) => {
    expect(parseConfig(`approvals:\n  mode: ${written}\n`, FILE).config.approvals.mode).toBe(read);
  });

  it('defaults to default, and an unknown mode is an error naming the key', () => {
    expect(parseConfig('', FILE).config.approvals.mode).toBe('default');
    expect(failure('approvals: {mode: ask}').message).toContain('approvals.mode');
  });
});

describe('docs/configuration.md examples', () => {
  const docs = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
  const examples = [...docs.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
  it.each(examples.filter((text) => /^(listener|logging|providers|approvals):/m.test(text)))(
    'parses:\n%s',
    (text) => {
      expect(() => parseConfig(text, FILE)).not.toThrow();
    },
  );
});

describe('docs/messaging.md examples', () => {
  const docs = readFileSync(new URL('../../../docs/messaging.md', import.meta.url), 'utf8');
  const examples = [...docs.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
  it.each(examples.filter((text) => /^platforms:\n {2}telegram:/m.test(text)))('parses:\n%s', (text) => {
    expect(() => parseConfig(text, FILE)).not.toThrow();
  });
});

describe('platforms.discord', () => {
  it('fills the defaults and takes ids as strings', () => {
    const { config } = parseConfig(
      'platforms:\n  discord: {allowed_role_ids: [777], allowed_user_ids: ["301"]}',
      FILE,
    );
    expect(config.platforms.discord).toEqual({
      enabled: true,
      token_env: 'DISCORD_BOT_TOKEN',
      api_root: 'https://discord.com/api',
      allowed_user_ids: ['301'],
      allowed_role_ids: ['777'],
      require_mention: true,
      answer_dms: true,
      register_commands: true,
      redact_pii: false,
      during_turn: 'queue',
    });
  });

  it('refuses redact_pii, which Discord is exempt from (CTX-2), and an unknown key', () => {
    expect(failure('platforms:\n  discord: {redact_pii: true}').message).toContain(
      'Discord ids are never redacted',
    );
    expect(failure('platforms:\n  discord: {require_mentions: false}').message).toContain('require_mentions');
  });
});

describe('platforms.slack', () => {
  it('fills the defaults: two token variables, the Web API root, mentions in channels, DMs answered', () => {
    const { config } = parseConfig(
      'platforms:\n  slack: {allowed_user_ids: [U0ANN], allowed_channel_ids: [C0GEN]}',
      FILE,
    );
    expect(config.platforms.slack).toEqual({
      enabled: true,
      bot_token_env: 'SLACK_BOT_TOKEN',
      app_token_env: 'SLACK_APP_TOKEN',
      api_root: 'https://slack.com/api',
      allowed_user_ids: ['U0ANN'],
      allowed_channel_ids: ['C0GEN'],
      require_mention: true,
      answer_dms: true,
      redact_pii: false,
      during_turn: 'queue',
    });
  });

  it('refuses an id that is not a Slack one, a token written in the file, and an unknown key', () => {
    expect(failure('platforms:\n  slack: {allowed_user_ids: [ann]}').message).toContain(
      'must be a Slack user id, like U0123ABCD',
    );
    expect(failure('platforms:\n  slack: {allowed_channel_ids: [D0KIM]}').message).toContain(
      'must be a Slack channel id, like C0123ABCD',
    );
    expect(failure('platforms:\n  slack: {bot_token: xoxb-1}').message).toContain('bot_token');
  });
});

describe('cluster (SCL-1)', () => {
  const PG = 'store: {kind: postgres, url_env: GH_PG}';

  it('is off by default with a 10 s lease; every key is read', () => {
    expect(parseConfig('', FILE).config.cluster).toEqual({ enabled: false, lease_s: 10 });
    const { config } = parseConfig(`${PG}\ncluster: {enabled: true, lease_s: 4, instance_name: api-1}`, FILE);
    expect(config.cluster).toEqual({ enabled: true, lease_s: 4, instance_name: 'api-1' });
  });

  it('is refused on SQLite, and a bad lease, name or unknown key is named', () => {
    expect(failure('cluster: {enabled: true}').message).toMatch(
      /cluster\.enabled.*needs store\.kind: postgres/,
    );
    expect(failure(`${PG}\ncluster: {enabled: true, lease_s: 1}`).message).toContain(
      'cluster.lease_s must be a whole number from 2 to 300',
    );
    expect(failure(`${PG}\ncluster: {lease_s: 2.5}`).message).toContain(
      'cluster.lease_s must be a whole number',
    );
    expect(failure(`${PG}\ncluster: {instance_name: 'a b'}`).message).toContain(
      'cluster.instance_name must be',
    );
    expect(failure(`${PG}\ncluster: {leases: 3}`).message).toContain('leases');
  });

  it('takes chat platforms in a cluster (one instance at a time receives for a bot: its lease)', () => {
    const telegram = 'platforms:\n  telegram: {token_env: TG_TOKEN}';
    const both = parseConfig(`${PG}\ncluster: {enabled: true}\n${telegram}`, FILE).config;
    expect(both.cluster.enabled).toBe(true);
    expect(both.platforms.telegram?.enabled).toBe(true);
  });
});

describe('cluster (docs/cluster.md)', () => {
  it('the example in docs/cluster.md parses as written, with the cluster on', () => {
    const docs = readFileSync(new URL('../../../docs/cluster.md', import.meta.url), 'utf8');
    const example = /```yaml\n([\s\S]*?)```/.exec(docs)![1]!;
    expect(parseConfig(example, FILE).config.cluster.enabled).toBe(true);
  });
});

describe('delegations', () => {
  const docs = readFileSync(new URL('../../../docs/scheduling.md', import.meta.url), 'utf8');
  const example = /```yaml\n(delegations:[\s\S]*?)```/.exec(docs)![1]!;

  it('defaults to depth 2 and 4 per session; the documented example parses to what it says', () => {
    expect(parseConfig('', FILE).config.delegations).toEqual({ max_depth: 2, max_per_session: 4 });
    expect(parseConfig(example, FILE).config.delegations).toEqual({ max_depth: 2, max_per_session: 4 });
    expect(parseConfig('delegations: {max_depth: 1}', FILE).config.delegations.max_depth).toBe(1);
  });

  it('refuses a limit that is not a whole number in range, or a key it does not know, by name', () => {
    expect(failure('delegations: {max_depth: 0}').message).toContain(
      'delegations.max_depth must be a whole number from 1 to 10',
    );
    expect(failure('delegations: {max_per_session: 2.5}').message).toContain(
      'delegations.max_per_session must be a whole number from 1 to 100',
    );
    expect(failure('delegations: {max_children: 3}').message).toContain('max_children');
  });
});
