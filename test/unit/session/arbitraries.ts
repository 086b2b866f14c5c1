/** fast-check generators shared by the session-model property tests. */
import fc from 'fast-check';
import { CHAT_TYPES } from '../../../src/index.js';
import type { SessionSourceFields } from '../../../src/index.js';

/** Strings that stress escaping and encoding: separators, percent signs, unicode, emptiness. */
export const trickyString = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.constantFrom(
    '',
    ':',
    '%',
    '%3A',
    '%25',
    '%-',
    '%5F',
    '!abc:example.org',
    'a:b',
    '日本語',
    '🙂',
    ' ',
    'thread_',
    'user_1',
    'thread_%',
  ),
);
const optional = fc.option(trickyString, { nil: null });

export const sourceFields: fc.Arbitrary<SessionSourceFields> = fc.record({
  platform: fc.oneof(
    fc.constantFrom('telegram', 'discord', 'slack', 'signal', 'whatsapp', 'matrix', 'local'),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }),
  ),
  chat_id: trickyString,
  chat_name: optional,
  chat_type: fc.constantFrom(...CHAT_TYPES),
  user_id: optional,
  user_name: optional,
  thread_id: optional,
  chat_topic: optional,
  user_id_alt: optional,
  chat_id_alt: optional,
  is_bot: fc.boolean(),
  guild_id: optional,
  parent_chat_id: optional,
  message_id: optional,
  role_authorized: fc.boolean(),
});

/**
 * Ids drawn from a small pool, so that two generated sources often differ in exactly one field or
 * one role: that is where a key scheme that is not injective would show itself.
 */
export const collidingId = fc.constantFrom(
  '',
  'a',
  'b',
  ':',
  'a:b',
  'a%3Ab',
  '%',
  '%-',
  '%25',
  '%3A',
  '%5F',
  'ü',
  'thread_a',
  'user_a',
  'user_',
);

export const keyedSource = fc.record({
  platform: fc.constantFrom('telegram', 'matrix', 'x:y', 'x%3Ay'),
  chat_id: collidingId,
  chat_type: fc.constantFrom(...CHAT_TYPES),
  user_id: fc.option(collidingId, { nil: null }),
  user_id_alt: fc.option(collidingId, { nil: null }),
  thread_id: fc.option(collidingId, { nil: null }),
});

export const keyOptions = fc.record({
  groupSessionsPerUser: fc.boolean(),
  threadSessionsPerUser: fc.boolean(),
});

/**
 * Two sources built from the same few values (x, y, 'x:y', '', 'x%' and x, y behind a marker-like
 * prefix), so they often hold the same strings in different fields or roles, which is exactly where
 * a weak key scheme would collide.
 */
export const neighbourPair = fc.tuple(collidingId, collidingId).chain(([x, y]) => {
  const pool = fc.constantFrom(x, y, `${x}:${y}`, '', `${x}%`, `thread_${x}`, `user_${y}`);
  const one = fc.record({
    platform: fc.constantFrom('telegram', 'matrix'),
    chat_id: pool,
    chat_type: fc.constantFrom(...CHAT_TYPES),
    user_id: fc.option(pool, { nil: null, freq: 2 }),
    user_id_alt: fc.option(pool, { nil: null, freq: 1 }),
    thread_id: fc.option(pool, { nil: null, freq: 2 }),
  });
  return fc.tuple(one, one);
});
