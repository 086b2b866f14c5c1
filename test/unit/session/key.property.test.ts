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
 * function: a DM is its conversation (chat_id, else the participant) and thread; any other chat is
 * chat, thread, and the participant only when isolation applies there.
 */
interface Lane {
  platform: string;
  chat_type: string;
  conversation: string | null;
  thread: string | null;
  member: string | null;
}

function laneOf(
  source: Keyed,
  options: Required<Pick<SessionKeyOptions, 'groupSessionsPerUser' | 'threadSessionsPerUser'>>,
): Lane {
  const id = (value: string | null): string | null =>
    source.platform === 'whatsapp' && value !== null ? canonicalWhatsAppIdentifier(value) : value;
  const chat = id(source.chat_id) ?? '';
  const participant = source.user_id_alt !== null ? id(source.user_id_alt) : id(source.user_id);
  const base = { platform: source.platform, chat_type: source.chat_type, thread: source.thread_id };
  if (source.chat_type === 'dm') {
    return { ...base, conversation: chat !== '' ? chat : participant, member: null };
  }
  const isolate = source.thread_id !== null ? options.threadSessionsPerUser : options.groupSessionsPerUser;
  return { ...base, conversation: chat, member: isolate ? participant : null };
}

const sameLane = (a: Lane, b: Lane): boolean => JSON.stringify(a) === JSON.stringify(b);

/**
 * The one pair of different lanes the seed's own format prints alike (see docs/session-model.md):
 * a shared thread T and, in the same chat, the isolated lane of participant T without a thread.
 */
function isSeedCoincidence(a: Lane, b: Lane): boolean {
  const thread = (x: Lane, y: Lane) =>
    x.chat_type !== 'dm' &&
    x.platform === y.platform &&
    x.chat_type === y.chat_type &&
    x.conversation === y.conversation &&
    x.thread !== null &&
    x.member === null &&
    y.thread === null &&
    y.member === x.thread;
  return thread(a, b) || thread(b, a);
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

  it('splits back into its decoded components', () => {
    fc.assert(
      fc.property(keyedSource, keyOptions, (source, options) => {
        const parts = buildSessionKey(source, options).split(':');
        expect(parts.slice(0, 2)).toEqual(['agent', 'main']);
        expect(decodeKeyComponent(parts[2] ?? '')).toBe(source.platform);
        expect(parts[3]).toBe(source.chat_type);
        const lane = laneOf(source, options);
        const rest = parts.slice(4).map(decodeKeyComponent);
        const expected =
          lane.chat_type === 'dm'
            ? [lane.conversation, lane.thread].filter(
                (x, i) => x !== null || (i === 0 && lane.thread !== null),
              )
            : [lane.conversation, lane.thread, lane.member].filter((x) => x !== null);
        expect(rest).toEqual(expected);
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
        } else if (!isSeedCoincidence(laneA, laneB)) {
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
        else if (!isSeedCoincidence(laneA, laneB))
          expect(buildSessionKey(b, options)).not.toBe(buildSessionKey(a, options));
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
        } else if (!isSeedCoincidence(laneA, laneB)) {
          differentLanes += 1;
          expect(buildSessionKey(a, options)).not.toBe(buildSessionKey(b, options));
        }
      }),
      { numRuns: 5000 },
    );
    expect(differentLanes).toBeGreaterThan(2500);
  });

  it('documents the seed coincidence: shared thread T and participant T print alike', () => {
    // Both rows are seed examples (`group:12345:thread_678`, `group:-10012345:user_abc`), so the
    // format itself cannot tell a shared thread from a participant in the same position.
    const thread: Keyed = {
      platform: 'telegram',
      chat_id: 'c',
      chat_type: 'group',
      thread_id: 'x',
      user_id: 'u',
      user_id_alt: null,
    };
    const member: Keyed = {
      platform: 'telegram',
      chat_id: 'c',
      chat_type: 'group',
      thread_id: null,
      user_id: 'x',
      user_id_alt: null,
    };
    expect(buildSessionKey(thread)).toBe(buildSessionKey(member));
    const options = { groupSessionsPerUser: true, threadSessionsPerUser: false };
    expect(isSeedCoincidence(laneOf(thread, options), laneOf(member, options))).toBe(true);
  });
});
