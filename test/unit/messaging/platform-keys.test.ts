/**
 * `platforms.<name>.members` (issue 30) and `during_turn` (issue 28) as the config file checks them,
 * the principal a mapped chat user is counted as, and `/budget`'s arguments (issue 29).
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/daemon/config.js';
import { DaemonError } from '../../../src/daemon/errors.js';
import { parseCommand } from '../../../src/domain/messaging/commands.js';
import { chatAnswerer, chatPrincipal, mappedPrincipal } from '../../../src/domain/auth/chat-members.js';
import { SessionSource } from '../../../src/domain/session/source.js';

const FILE = '/home/u/.gatehouse/config.yaml';

function refusal(text: string): string {
  try {
    parseConfig(text, FILE);
  } catch (error) {
    expect(error).toBeInstanceOf(DaemonError);
    return (error as DaemonError).message;
  }
  throw new Error('expected the config to be refused');
}

describe('platforms.<name>.members', () => {
  it('maps user ids to principals with their roles: members, the owner, and an oidc subject with its role', () => {
    const { config } = parseConfig(
      [
        'platforms:',
        '  telegram:',
        '    members:',
        '      "42": member:alice',
        '      "43": dashboard:owner',
        '      "44": {principal: "oidc:https://login.example.com/realms/team#2482", role: operator}',
        '  slack:',
        '    members: {U0ANN: member:ann}',
        '  echoroom:',
        '    members: {"guest-7": member:guest}',
      ].join('\n'),
      FILE,
    );
    expect(config.platforms.telegram!.members).toEqual({
      '42': { subject: 'member:alice', role: 'member' },
      '43': { subject: 'dashboard:owner', role: 'operator' },
      '44': { subject: 'oidc:https://login.example.com/realms/team#2482', role: 'operator' },
    });
    expect(config.platforms.slack!.members).toEqual({ U0ANN: { subject: 'member:ann', role: 'member' } });
    expect(config.platforms['echoroom']!.members).toEqual({
      'guest-7': { subject: 'member:guest', role: 'member' },
    });
  });

  it('refuses a bad user id, an unknown principal, an oidc subject without a role, and a role its subject is not', () => {
    expect(refusal('platforms:\n  telegram:\n    members: {alice: member:alice}')).toContain(
      'platforms.telegram.members.alice: must be keyed by a numeric Telegram user id',
    );
    expect(refusal('platforms:\n  slack:\n    members: {ann: member:ann}')).toContain(
      'platforms.slack.members.ann: must be keyed by a Slack user id, like U0123ABCD',
    );
    expect(refusal('platforms:\n  discord:\n    members: {"301": alice}')).toContain(
      'must be a principal: member:<name>, native:owner, dashboard:owner',
    );
    expect(refusal('platforms:\n  telegram:\n    members: {"42": "oidc:https://idp#7"}')).toContain(
      "oidc:https://idp#7: an oidc principal's role is decided at sign-in; write { principal:",
    );
    expect(
      refusal('platforms:\n  telegram:\n    members: {"42": {principal: member:alice, role: operator}}'),
    ).toContain('member:alice is a member, not an operator');
    expect(
      refusal('platforms:\n  telegram:\n    members: {"42": {principal: member:alice, role: boss}}'),
    ).toContain('platforms.telegram.members.42: must be a principal');
  });

  it('a mapped sender is counted as its principal; an unmapped one as <platform>:<user id>, as before', () => {
    const members = new Map([['42', { subject: 'member:alice', role: 'member' as const }]]);
    const source = (user: string) =>
      new SessionSource({ platform: 'telegram', chat_id: '9', chat_type: 'dm', user_id: user });
    const alice = mappedPrincipal(source('42'), members);
    expect(alice).toEqual({ subject: 'member:alice', role: 'member' });
    expect(chatPrincipal(source('42'), alice)).toBe('member:alice');
    expect(chatAnswerer(source('42'), alice)).toBe('member:alice@telegram');
    expect(mappedPrincipal(source('43'), members)).toBeNull();
    expect(chatPrincipal(source('43'), null)).toBe('telegram:43');
    expect(mappedPrincipal(source('42'), undefined)).toBeNull();
  });
});

describe('/budget', () => {
  it('parses show, continue and raise, and refuses anything else with its usage', () => {
    expect(parseCommand('/budget')).toEqual({ name: 'budget', action: 'show' });
    expect(parseCommand('/budget continue')).toEqual({ name: 'budget', action: 'continue' });
    expect(parseCommand('/budget raise --tokens 5000')).toEqual({
      name: 'budget',
      action: 'raise',
      tokens: 5000,
      usd: null,
    });
    expect(parseCommand('/budget raise --usd 2.5 --tokens 10')).toEqual({
      name: 'budget',
      action: 'raise',
      tokens: 10,
      usd: 2.5,
    });
    expect(parseCommand('/budget raise')).toEqual({
      name: 'invalid',
      message: '/budget raise: name the new limit: --tokens N, --usd X, or both.',
    });
    expect(parseCommand('/budget raise --usd -1')).toEqual({
      name: 'invalid',
      message: '/budget raise: --usd must be a number above 0.',
    });
    for (const text of [
      '/budget raise --tokens',
      '/budget raise --tokens 5 --tokens 6',
      '/budget now',
      '/budget continue now',
    ])
      expect(parseCommand(text)).toEqual({
        name: 'invalid',
        message: 'Usage: /budget, /budget continue, or /budget raise --tokens N --usd X',
      });
  });
});

describe('docs/identity.md, "Chat platforms"', () => {
  it('its example is a config the daemon takes, with the roles it says', async () => {
    const { readFileSync } = await import('node:fs');
    const docs = readFileSync(new URL('../../../docs/identity.md', import.meta.url), 'utf8');
    const section = docs.slice(docs.indexOf('## Chat platforms'));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)![1]!;
    const { config } = parseConfig(yaml, FILE);
    expect(config.platforms.telegram!.members).toEqual({
      '123456789': { subject: 'dashboard:owner', role: 'operator' },
      '987654321': { subject: 'member:alice', role: 'member' },
      '555000111': { subject: 'oidc:https://login.example.com/realms/team#248289761001', role: 'member' },
    });
    expect(config.platforms.slack!.members).toEqual({
      U0123ABCD: { subject: 'member:alice', role: 'member' },
    });
  });
});

describe('platforms.<name>.during_turn', () => {
  it('is queue by default, steer when set, and refused otherwise; the documented example parses', async () => {
    const { config } = parseConfig('platforms:\n  slack: {}\n  discord: {during_turn: steer}', FILE);
    expect(config.platforms.slack!.during_turn).toBe('queue');
    expect(config.platforms.discord!.during_turn).toBe('steer');
    expect(refusal('platforms:\n  telegram: {during_turn: steers}')).toContain(
      'platforms.telegram.during_turn: must be queue (the next turn) or steer (applied to the running turn)',
    );
    const { readFileSync } = await import('node:fs');
    const docs = readFileSync(new URL('../../../docs/scheduling.md', import.meta.url), 'utf8');
    const yaml = /```yaml\n([\s\S]*?)```/.exec(docs.slice(docs.indexOf('### On chat platforms')))![1]!;
    expect(parseConfig(yaml, FILE).config.platforms.telegram!.during_turn).toBe('steer');
  });
});
