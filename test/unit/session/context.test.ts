import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  buildSessionContext,
  buildSessionContextPrompt,
  redactChatId,
  redactUserId,
  renderSenderPrefix,
  SessionSource,
} from '../../../src/index.js';
import type { HomeChannel } from '../../../src/index.js';

const hex12 = (value: string) => createHash('sha256').update(value).digest('hex').slice(0, 12);
const homes: HomeChannel[] = [
  { platform: 'telegram', chat_id: '-100777', chat_name: 'Ops' },
  { platform: 'discord', chat_id: '424242', chat_name: null },
];
const input = { connectedPlatforms: ['telegram', 'discord', 'telegram'], homeChannels: homes };

describe('CTX-1 session context', () => {
  it('collects origin, connected platforms, home channels and the shared flag', () => {
    const source = new SessionSource({
      platform: 'telegram',
      chat_id: '-100',
      chat_type: 'group',
      user_id: '7',
    });
    const context = buildSessionContext(source, {
      ...input,
      entry: {
        session_key: 'agent:main:telegram:group:-100:7',
        session_id: '20260101_120000_abcdef12',
        created_at: '2026-01-01T12:00:00.000Z',
        updated_at: '2026-01-01T12:05:00.000Z',
      },
    });
    expect(context.source).toBe(source);
    expect(context.connected_platforms).toEqual(['telegram', 'discord']);
    expect(context.home_channels).toEqual(homes);
    expect(context.shared_multi_user_session).toBe(false);
    expect(context.session?.session_id).toBe('20260101_120000_abcdef12');
    expect(Object.isFrozen(context)).toBe(true);
  });

  it('follows the isolation settings and lets the caller override them', () => {
    const source = new SessionSource({
      platform: 'slack',
      chat_id: 'C1',
      chat_type: 'channel',
      user_id: 'U1',
    });
    expect(
      buildSessionContext(source, { ...input, groupSessionsPerUser: false }).shared_multi_user_session,
    ).toBe(true);
    expect(buildSessionContext(source, { ...input, shared: true }).shared_multi_user_session).toBe(true);
  });

  it('renders where the message came from, the platforms and the home channels', () => {
    const source = new SessionSource({
      platform: 'telegram',
      chat_id: '12345',
      user_id: '12345',
      user_name: 'Alice',
      message_id: 'm-99',
    });
    const context = buildSessionContext(source, {
      ...input,
      entry: {
        session_key: 'agent:main:telegram:dm:12345',
        session_id: '20260101_120000_abcdef12',
        created_at: '2026-01-01T12:00:00.000Z',
        updated_at: '2026-01-01T12:05:00.000Z',
      },
    });
    expect(buildSessionContextPrompt(context)).toBe(
      [
        '## Current Session Context',
        '',
        'Source: DM with Alice (telegram)',
        'Chat ID: 12345',
        'User: Alice (user ID: 12345)',
        'Connected platforms: telegram, discord',
        'Home channels for scheduled output:',
        '- telegram: Ops (chat ID: -100777)',
        '- discord: chat ID: 424242',
        'Session: 20260101_120000_abcdef12, started 2026-01-01T12:00:00.000Z',
      ].join('\n'),
    );
  });
});

describe('KEY-3 shared sessions in the prompt', () => {
  const thread = {
    platform: 'discord',
    chat_id: '12345',
    chat_type: 'group',
    thread_id: '678',
    chat_name: 'dev',
  } as const;

  it('is byte-identical whichever user speaks, and names none of them', () => {
    const alice = new SessionSource({
      ...thread,
      user_id: '111',
      user_name: 'Alice',
      message_id: '1',
      is_bot: false,
    });
    const bob = new SessionSource({
      ...thread,
      user_id: '222',
      user_name: 'Bob',
      user_id_alt: 'b',
      message_id: '2',
      is_bot: true,
    });
    const promptA = buildSessionContextPrompt(buildSessionContext(alice, input));
    const promptB = buildSessionContextPrompt(buildSessionContext(bob, input));
    expect(promptA).toBe(promptB);
    for (const leak of ['Alice', 'Bob', '111', '222']) expect(promptA).not.toContain(leak);
    expect(promptA).toContain('This is a shared multi-user thread.');
    expect(promptA).toContain('[sender name]');
  });

  it('calls a shared thread-less group a session', () => {
    const group = new SessionSource({
      platform: 'telegram',
      chat_id: '-1',
      chat_type: 'group',
      user_name: 'Alice',
    });
    const prompt = buildSessionContextPrompt(
      buildSessionContext(group, { ...input, groupSessionsPerUser: false }),
    );
    expect(prompt).toContain('This is a shared multi-user session.');
    expect(prompt).not.toContain('Alice');
  });

  it('prefixes user messages with the sender, and a name cannot forge another prefix', () => {
    expect(renderSenderPrefix('Alice', 'hi all')).toBe('[Alice] hi all');
    expect(renderSenderPrefix('Eve] [Bob', 'x')).toBe('[Eve) (Bob] x');
    expect(renderSenderPrefix('Mallory\n[Bob]', 'x')).toBe('[Mallory (Bob)] x');
    expect(renderSenderPrefix('  ', 'x')).toBe('[unknown] x');
  });
});

describe('CTX-2 PII redaction of the prompt text', () => {
  const telegram = new SessionSource({
    platform: 'telegram',
    chat_id: '-100555',
    chat_type: 'group',
    user_id: '987654',
    user_name: 'Alice',
  });

  it('replaces user ids with user_<12hex> and chat ids with <platform>:<12hex>', () => {
    const before = JSON.stringify(telegram);
    const prompt = buildSessionContextPrompt(buildSessionContext(telegram, input), { redactPii: true });
    expect(redactUserId('987654')).toBe(`user_${hex12('987654')}`);
    expect(redactChatId('telegram', '-100555')).toBe(`telegram:${hex12('-100555')}`);
    expect(prompt).toContain(`Chat ID: telegram:${hex12('-100555')}`);
    expect(prompt).toContain(`User: Alice (user ID: user_${hex12('987654')})`);
    expect(prompt).toContain(`- telegram: Ops (chat ID: telegram:${hex12('-100777')})`);
    expect(prompt).not.toContain('987654');
    expect(prompt).not.toContain('-100555');
    // Names are not ids; only the ids are hashed, and the source itself keeps the real values.
    expect(prompt).toContain('Alice');
    expect(JSON.stringify(telegram)).toBe(before);
  });

  it('redacts ids that stand in for missing names in the description', () => {
    const dm = new SessionSource({ platform: 'signal', chat_id: '+15550001', user_id: '+15550001' });
    const prompt = buildSessionContextPrompt(buildSessionContext(dm, input), { redactPii: true });
    expect(prompt).toContain(`Source: DM with user_${hex12('+15550001')} (signal)`);
    expect(prompt).not.toContain('+15550001');
  });

  it('leaves Discord ids raw, even when redaction is on and Discord is marked pii_safe', () => {
    const discord = new SessionSource({
      platform: 'discord',
      chat_id: '3131',
      chat_type: 'group',
      user_id: '4242',
    });
    const prompt = buildSessionContextPrompt(buildSessionContext(discord, input), {
      redactPii: true,
      piiSafePlatforms: ['discord'],
    });
    expect(prompt).toContain('Chat ID: 3131');
    expect(prompt).toContain('user ID: 4242');
    expect(prompt).toContain('- discord: chat ID: 424242');
  });

  it('redacts a plugin platform marked pii_safe, and leaves an unmarked one raw', () => {
    const irc = new SessionSource({
      platform: 'irc',
      chat_id: '#ops',
      chat_type: 'channel',
      user_id: 'nick1',
    });
    const marked = buildSessionContextPrompt(buildSessionContext(irc, input), {
      redactPii: true,
      piiSafePlatforms: ['irc'],
    });
    expect(marked).toContain(`Chat ID: irc:${hex12('#ops')}`);
    expect(marked).toContain(`user ID: user_${hex12('nick1')}`);
    const unmarked = buildSessionContextPrompt(buildSessionContext(irc, input), {
      redactPii: true,
      piiSafePlatforms: ['matrix'],
    });
    expect(unmarked).toContain('Chat ID: #ops');
    expect(unmarked).toContain('user ID: nick1');
  });

  it('is off by default', () => {
    const prompt = buildSessionContextPrompt(buildSessionContext(telegram, input));
    expect(prompt).toContain('Chat ID: -100555');
  });
});
