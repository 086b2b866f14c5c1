import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../../src/domain/messaging/commands.js';
import { isSilentReply, planRecovery } from '../../../src/domain/messaging/recovery.js';
import { splitMessage } from '../../../src/domain/messaging/split.js';
import {
  normalizeTelegramChatId,
  sourceOfMessage,
  textForBot,
} from '../../../src/surfaces/platforms/telegram/source.js';
import { PlatformRegistry } from '../../../src/surfaces/platforms/registry.js';
import { MemoryAdapter } from '../../fixtures/memory-adapter.js';
import type { Message } from 'grammy/types';

describe('long replies split at the platform limit', () => {
  it('keeps every character, stays under the limit, prefers line breaks', () => {
    const text = Array.from({ length: 300 }, (_, i) => `line ${i} ${'x'.repeat(i % 40)}`).join('\n');
    const pieces = splitMessage(text, 500);
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(500);
    expect(pieces.join('\n')).toBe(text);
  });

  it('closes and reopens a code fence cut in the middle, with its language', () => {
    const code = Array.from({ length: 80 }, (_, i) => `print(${i})`).join('\n');
    const pieces = splitMessage(`Here:\n\`\`\`python\n${code}\n\`\`\`\nDone.`, 300);
    for (const piece of pieces) {
      expect((piece.match(/```/g) ?? []).length % 2).toBe(0);
      expect(piece.length).toBeLessThanOrEqual(300);
    }
    expect(pieces[1]!.startsWith('```python\n')).toBe(true);
  });

  it('never separates a surrogate pair', () => {
    const pieces = splitMessage('😀'.repeat(100), 31);
    for (const piece of pieces) expect(piece).toMatch(/^(😀)+$/u);
    expect(pieces.join('')).toBe('😀'.repeat(100));
  });
});

describe('chat commands', () => {
  it('parses bare commands and leaves addressed ones and unknown slashes to the agent', () => {
    expect(parseCommand('/new')).toEqual({ name: 'new' });
    expect(parseCommand('/stop@gatehouse_bot')).toBeNull();
    expect(parseCommand('/queue  do it later ')).toEqual({ name: 'queue', text: 'do it later' });
    expect(parseCommand('/approve always')).toEqual({ name: 'approve', choice: 'always' });
    expect(parseCommand('/approve maybe')).toMatchObject({ name: 'invalid' });
    expect(parseCommand('/queue')).toMatchObject({ name: 'invalid' });
    expect(parseCommand('/weather today')).toBeNull();
    expect(parseCommand('hello /new')).toBeNull();
    expect(parseCommand('/resume 20260101_120000_0a1b2c3d')).toEqual({
      name: 'resume',
      sessionId: '20260101_120000_0a1b2c3d',
    });
    expect(parseCommand('/resume')).toMatchObject({ name: 'invalid' });
    expect(parseCommand('/resume ../etc')).toMatchObject({ name: 'invalid' });
  });
});

describe('issue 12 item 10: a Telegram command is one only when bare or addressed to this bot', () => {
  it('drops its own address, ignores other bots in groups, passes them on as text in a DM', () => {
    expect(textForBot('/new', 'group', 'gatehouse_bot')).toBe('/new');
    expect(textForBot('/new@gatehouse_bot', 'group', 'gatehouse_bot')).toBe('/new');
    expect(textForBot('/queue@Gatehouse_Bot do it later', 'group', 'gatehouse_bot')).toBe(
      '/queue do it later',
    );
    expect(parseCommand(textForBot('/stop@gatehouse_bot', 'thread', 'gatehouse_bot')!)).toEqual({
      name: 'stop',
    });
    for (const chatType of ['group', 'channel', 'thread'] as const) {
      expect(textForBot('/new@SomeOtherBot', chatType, 'gatehouse_bot')).toBeNull();
    }
    expect(textForBot('/new@SomeOtherBot', 'dm', 'gatehouse_bot')).toBe('/new@SomeOtherBot');
    expect(parseCommand('/new@SomeOtherBot')).toBeNull();
    // An address anywhere but right after a leading command is ordinary text.
    expect(textForBot('mail me@example.org', 'group', 'gatehouse_bot')).toBe('mail me@example.org');
    expect(textForBot('hello /new@SomeOtherBot', 'group', 'gatehouse_bot')).toBe('hello /new@SomeOtherBot');
  });
});

describe('REC-4, REC-5 recovery decisions', () => {
  const base = {
    nowEpoch: 1_000_000,
    maxAgeSeconds: 3600,
    streaks: new Map<string, number>(),
    stuckAfter: 3,
  };

  it('a clean shutdown skips everything and clears streaks', () => {
    const plan = planRecovery({
      ...base,
      cleanShutdown: true,
      markers: [{ session_key: 'k', started_at_epoch: 999_999, replyPersisted: false }],
      streaks: new Map([['k', 2]]),
    });
    expect(plan).toEqual({ resume: [], suspend: [], settled: [], stale: [], streaks: new Map() });
  });

  it('a marker whose key moved to another session (reset, switch, prune) is dropped, not resumed', () => {
    const plan = planRecovery({
      ...base,
      cleanShutdown: false,
      markers: [{ session_key: 'reset', started_at_epoch: 999_990, replyPersisted: false, moved: true }],
      streaks: new Map([['reset', 2]]),
    });
    expect(plan).toEqual({ resume: [], suspend: [], settled: [], stale: [], streaks: new Map() });
  });

  it('persisted → settled, missing → resume, stale → dropped, third restart → suspended', () => {
    const plan = planRecovery({
      ...base,
      cleanShutdown: false,
      markers: [
        { session_key: 'done', started_at_epoch: 999_990, replyPersisted: true },
        { session_key: 'mid', started_at_epoch: 999_990, replyPersisted: false },
        { session_key: 'old', started_at_epoch: 990_000, replyPersisted: false },
        { session_key: 'stuck', started_at_epoch: 999_990, replyPersisted: false },
      ],
      streaks: new Map([
        ['stuck', 2],
        ['gone', 1],
      ]),
    });
    expect(plan.settled).toEqual(['done']);
    expect(plan.resume).toEqual(['mid']);
    expect(plan.suspend).toEqual(['stuck']);
    expect(plan.streaks).toEqual(new Map([['mid', 1]]));
  });

  it('a turn older than freshnessSeconds is stale (told, not resumed); an orphan past maxAge is dropped silently', () => {
    const fresh = { session_key: 'fresh', started_at_epoch: 999_950, replyPersisted: false };
    const old = { session_key: 'old', started_at_epoch: 999_900, replyPersisted: false };
    const orphan = { session_key: 'orphan', started_at_epoch: 990_000, replyPersisted: false };
    const stuck = { session_key: 'stuck', started_at_epoch: 999_000, replyPersisted: false };
    const plan = planRecovery({
      ...base,
      cleanShutdown: false,
      freshnessSeconds: 60,
      markers: [fresh, old, orphan, stuck],
      streaks: new Map([['stuck', 2]]),
    });
    expect(plan.resume).toEqual(['fresh']);
    expect(plan.stale).toEqual([old]);
    expect(plan.suspend).toEqual(['stuck']);
    expect(plan.streaks).toEqual(new Map([['fresh', 1]]));
    // Without the window, the same old turn is resumed.
    const unlimited = planRecovery({ ...base, cleanShutdown: false, markers: [old] });
    expect(unlimited).toMatchObject({ resume: ['old'], stale: [] });
  });

  it('treats silence tokens and empty answers as nothing to deliver', () => {
    for (const text of ['[SILENT]', ' NO_REPLY\n', '', null]) expect(isSilentReply(text)).toBe(true);
    expect(isSilentReply('NO_REPLY needed, here is the answer')).toBe(false);
  });
});

describe('Telegram sources (SRC-1, KEY-1)', () => {
  const message = (extra: Partial<Message>): Message => ({
    message_id: 5,
    date: 0,
    chat: { id: -100, type: 'supergroup', title: 'Team' },
    from: { id: 9, is_bot: false, first_name: 'Ann', username: 'ann' },
    text: 'x',
    ...extra,
  });

  it('maps DMs, groups and forum topics', () => {
    expect(sourceOfMessage(message({ chat: { id: 9, type: 'private', first_name: 'Ann' } })).chat_type).toBe(
      'dm',
    );
    const group = sourceOfMessage(message({}));
    expect(group).toMatchObject({
      chat_type: 'group',
      chat_id: '-100',
      chat_name: 'Team',
      user_id: '9',
      thread_id: null,
    });
    const topic = sourceOfMessage(message({ message_thread_id: 7, is_topic_message: true }));
    expect(topic).toMatchObject({ chat_type: 'thread', thread_id: '7', message_id: '5' });
    // A reply in a non-forum group carries message_thread_id too; it is not a topic.
    expect(sourceOfMessage(message({ message_thread_id: 3 })).chat_type).toBe('group');
  });

  it('normalises chat ids', () => {
    expect(normalizeTelegramChatId(' +42 ')).toBe('42');
    expect(normalizeTelegramChatId('-1001234567890')).toBe('-1001234567890');
    expect(normalizeTelegramChatId('@channel')).toBe('@channel');
  });
});

describe('platform registry', () => {
  it('creates plugin adapters by their own names and refuses unknown or duplicate names', async () => {
    const registry = new PlatformRegistry();
    registry.register('mastodon', () => new MemoryAdapter('mastodon'));
    expect((await registry.create('mastodon', {})).platform).toBe('mastodon');
    expect(() => registry.register('mastodon', () => new MemoryAdapter('mastodon'))).toThrow(
      /already registered/,
    );
    await expect(registry.create('irc', {})).rejects.toThrow(/no platform named "irc"/);
    registry.register('liar', () => new MemoryAdapter('other'));
    await expect(registry.create('liar', {})).rejects.toThrow(/made an adapter for "other"/);
  });

  it('takes async factories (a platform that loads its SDK when it is created)', async () => {
    const registry = new PlatformRegistry();
    registry.register('matrix', async () => {
      await Promise.resolve();
      return new MemoryAdapter('matrix');
    });
    expect((await registry.create('matrix', {})).platform).toBe('matrix');
    registry.register('broken', () => Promise.reject(new Error('no such SDK')));
    await expect(registry.create('broken', {})).rejects.toThrow('no such SDK');
  });
});
