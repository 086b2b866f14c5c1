import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { buildSessionKey, canonicalWhatsAppIdentifier, decodeKeyComponent } from '../../../src/index.js';
import type { SessionKeyOptions, SessionSourceFields } from '../../../src/index.js';
import { keyOptions, keyedSource, neighbourPair, sourceFields } from './arbitraries.js';

type Keyed = Pick<
  SessionSourceFields,
  'platform' | 'chat_id' | 'chat_type' | 'user_id' | 'user_id_alt' | 'thread_id'
>;

/**
 * Which conversation a source belongs to, written straight from seed 002 §4/§5 and without the key
 * function. A DM is named by its chat id; a DM without one by its participant, which is a different
 * kind of name (a DM with chat id X and the chat-less DM of user X are different lanes); with
 * neither, by nothing. Any other chat is the chat, the thread, and the participant only when
 * isolation applies there.
 */
interface Lane {
  platform: string;
  chat_type: string;
  chat: string | null;
  thread: string | null;
  member: string | null;
}

type Isolation = Required<Pick<SessionKeyOptions, 'groupSessionsPerUser' | 'threadSessionsPerUser'>>;

function laneOf(source: Keyed, options: Isolation): Lane {
  const id = (value: string | null): string | null =>
    source.platform === 'whatsapp' && value !== null && value !== ''
      ? canonicalWhatsAppIdentifier(value)
      : value;
  const chat = id(source.chat_id) ?? '';
  const participant = source.user_id_alt !== null ? id(source.user_id_alt) : id(source.user_id);
  const base = { platform: source.platform, chat_type: source.chat_type, thread: source.thread_id };
  if (source.chat_type === 'dm') {
    return chat !== '' ? { ...base, chat, member: null } : { ...base, chat: null, member: participant };
  }
  const isolate = source.thread_id !== null ? options.threadSessionsPerUser : options.groupSessionsPerUser;
  return { ...base, chat, member: isolate ? participant : null };
}

const sameLane = (a: Lane, b: Lane): boolean =>
  a.platform === b.platform &&
  a.chat_type === b.chat_type &&
  a.chat === b.chat &&
  a.thread === b.thread &&
  a.member === b.member;

/**
 * Reads a key back into a lane by the documented format alone (its own decoder, not the library's):
 * the chat comes first unless it is absent, `thread_` and `user_` mark the other components, and
 * `%`, `%25`, `%3A`, `%5F` are the only escapes. Throws on anything the format does not allow.
 */
function readKey(key: string): Lane {
  const unescape = (text: string): string =>
    text === '%'
      ? ''
      : text.replace(/%(25|3A|5F)/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  const [agent, main, platform, chat_type, ...rest] = key.split(':');
  if (agent !== 'agent' || main !== 'main' || platform === undefined || chat_type === undefined) {
    throw new Error(`not a session key: ${key}`);
  }
  const lane: Lane = { platform: unescape(platform), chat_type, chat: null, thread: null, member: null };
  let stage = 0; // 0: chat may come, 1: thread may come, 2: participant may come, 3: nothing more
  for (const part of rest) {
    if (part.startsWith('thread_') && stage <= 1) {
      lane.thread = unescape(part.slice('thread_'.length));
      stage = 2;
    } else if (part.startsWith('user_') && stage <= 2) {
      lane.member = unescape(part.slice('user_'.length));
      stage = 3;
    } else if (stage === 0 && part !== '') {
      lane.chat = unescape(part);
      stage = 1;
    } else {
      throw new Error(`unexpected component ${part} in ${key}`);
    }
  }
  // A chat component is always written for non-DM chats, so a missing one there is a defect.
  if (chat_type !== 'dm' && lane.chat === null) throw new Error(`chat missing in ${key}`);
  return lane;
}

describe('KEY-1 session key properties', () => {
  it('is deterministic: equal sources give equal keys, whatever the other fields say', () => {
    fc.assert(
      fc.property(sourceFields, keyOptions, (fields, options) => {
        const copy = JSON.parse(JSON.stringify(fields)) as SessionSourceFields;
        expect(buildSessionKey(copy, options)).toBe(buildSessionKey(fields, options));
      }),
      { numRuns: 300 },
    );
  });

  it('reads back as exactly its lane, so no two lanes can share a key', () => {
    fc.assert(
      fc.property(keyedSource, keyOptions, (source, options) => {
        const key = buildSessionKey(source, options);
        expect(readKey(key)).toEqual(laneOf(source, options));
        for (const part of key.split(':').slice(2)) {
          const id = part.replace(/^(thread_|user_)/, '');
          expect(decodeKeyComponent(id)).toBe(readKey(`agent:main:${id}:dm`).platform);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('is injective: same lane gives the same key, different lanes different keys', () => {
    let differentLanes = 0;
    fc.assert(
      fc.property(keyedSource, keyedSource, keyOptions, (a, b, options) => {
        const laneA = laneOf(a, options);
        const laneB = laneOf(b, options);
        const keyA = buildSessionKey(a, options);
        const keyB = buildSessionKey(b, options);
        if (sameLane(laneA, laneB)) {
          expect(keyA).toBe(keyB);
        } else {
          differentLanes += 1;
          expect(keyA).not.toBe(keyB);
        }
      }),
      { numRuns: 3000 },
    );
    expect(differentLanes).toBeGreaterThan(1000);
  });

  it('is injective over near-identical pairs: one field or one role changed', () => {
    const mutation = fc.constantFrom(
      'chat_id',
      'user_id',
      'user_id_alt',
      'thread_id',
      'chat_type',
      'platform',
    );
    fc.assert(
      fc.property(keyedSource, mutation, keyedSource, keyOptions, (a, field, donor, options) => {
        const b = { ...a, [field]: donor[field] } as Keyed;
        const laneA = laneOf(a, options);
        const laneB = laneOf(b, options);
        if (sameLane(laneA, laneB)) expect(buildSessionKey(b, options)).toBe(buildSessionKey(a, options));
        else expect(buildSessionKey(b, options)).not.toBe(buildSessionKey(a, options));
      }),
      { numRuns: 3000 },
    );
  });

  it('is injective over neighbours: the same few values in different fields and roles', () => {
    let differentLanes = 0;
    fc.assert(
      fc.property(neighbourPair, keyOptions, ([a, b], options) => {
        const laneA = laneOf(a, options);
        const laneB = laneOf(b, options);
        if (sameLane(laneA, laneB)) {
          expect(buildSessionKey(a, options)).toBe(buildSessionKey(b, options));
        } else {
          differentLanes += 1;
          expect(buildSessionKey(a, options)).not.toBe(buildSessionKey(b, options));
        }
      }),
      { numRuns: 5000 },
    );
    expect(differentLanes).toBeGreaterThan(2500);
  });

  it('regression: a shared thread T and the per-user lane of participant T no longer meet', () => {
    // Before the markers both printed `agent:main:telegram:group:c:x`.
    const thread: Keyed = {
      platform: 'telegram',
      chat_id: 'c',
      chat_type: 'group',
      thread_id: 'x',
      user_id: 'u',
      user_id_alt: null,
    };
    const member: Keyed = { ...thread, thread_id: null, user_id: 'x' };
    expect(buildSessionKey(thread)).toBe('agent:main:telegram:group:c:thread_x');
    expect(buildSessionKey(member)).toBe('agent:main:telegram:group:c:user_x');
    const options = { groupSessionsPerUser: true, threadSessionsPerUser: false };
    expect(sameLane(laneOf(thread, options), laneOf(member, options))).toBe(false);
  });

  it('regression: a chat id spelled like a marked component cannot stand in for one', () => {
    const options = { groupSessionsPerUser: true, threadSessionsPerUser: false };
    const pairs: [Keyed, Keyed][] = [
      [
        {
          platform: 'slack',
          chat_id: 'thread_9',
          chat_type: 'dm',
          thread_id: null,
          user_id: null,
          user_id_alt: null,
        },
        { platform: 'slack', chat_id: '', chat_type: 'dm', thread_id: '9', user_id: null, user_id_alt: null },
      ],
      [
        {
          platform: 'slack',
          chat_id: 'user_9',
          chat_type: 'dm',
          thread_id: null,
          user_id: null,
          user_id_alt: null,
        },
        { platform: 'slack', chat_id: '', chat_type: 'dm', thread_id: null, user_id: '9', user_id_alt: null },
      ],
      [
        {
          platform: 'slack',
          chat_id: '9',
          chat_type: 'dm',
          thread_id: null,
          user_id: null,
          user_id_alt: null,
        },
        { platform: 'slack', chat_id: '', chat_type: 'dm', thread_id: null, user_id: '9', user_id_alt: null },
      ],
    ];
    for (const [a, b] of pairs) {
      expect(sameLane(laneOf(a, options), laneOf(b, options))).toBe(false);
      expect(buildSessionKey(a, options)).not.toBe(buildSessionKey(b, options));
    }
  });
});
