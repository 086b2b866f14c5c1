import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { InvalidSessionSourceError, SessionSource } from '../../../src/index.js';
import { sourceFields } from './arbitraries.js';

function expectInvalid(run: () => unknown, field: string | null, fragment: string): void {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidSessionSourceError);
    const typed = error as InvalidSessionSourceError;
    expect(typed.reason).toBe('invalid_session_source');
    expect(typed.field).toBe(field);
    expect(typed.message).toContain(fragment);
    return;
  }
  throw new Error('expected InvalidSessionSourceError');
}

describe('SRC-1 SessionSource record', () => {
  it('fills the seed defaults: dm, booleans false, optional fields null', () => {
    const source = new SessionSource({ platform: 'telegram', chat_id: '12345' });
    expect(source.toJSON()).toEqual({
      platform: 'telegram',
      chat_id: '12345',
      chat_name: null,
      chat_type: 'dm',
      user_id: null,
      user_name: null,
      thread_id: null,
      chat_topic: null,
      user_id_alt: null,
      chat_id_alt: null,
      is_bot: false,
      guild_id: null,
      parent_chat_id: null,
      message_id: null,
      role_authorized: false,
    });
  });

  it('is immutable', () => {
    const source = new SessionSource({ platform: 'slack', chat_id: 'C1', chat_type: 'channel' });
    expect(Object.isFrozen(source)).toBe(true);
    expect(() => {
      (source as { chat_id: string }).chat_id = 'C2';
    }).toThrow(TypeError);
    expect(source.with({ chat_id: 'C2' }).chat_id).toBe('C2');
    expect(source.chat_id).toBe('C1');
  });

  it('keeps an unknown plugin platform through a round trip', () => {
    const source = new SessionSource({ platform: 'my-plugin:irc', chat_id: '#ops', chat_type: 'channel' });
    const back = SessionSource.parse(JSON.stringify(source));
    expect(back.platform).toBe('my-plugin:irc');
    expect(back).toEqual(source);
  });

  it('round-trips every generated source losslessly through JSON text', () => {
    fc.assert(
      fc.property(sourceFields, (fields) => {
        const source = new SessionSource(fields);
        expect(source.toJSON()).toEqual(fields);
        const back = SessionSource.parse(JSON.stringify(source));
        expect(back.toJSON()).toEqual(fields);
        expect(SessionSource.fromJSON(JSON.parse(JSON.stringify(back)))).toEqual(source);
      }),
      { numRuns: 300 },
    );
  });
});

describe('SRC-1 SessionSource description', () => {
  const cases: [string, ConstructorParameters<typeof SessionSource>[0], string][] = [
    [
      'DM by user name',
      { platform: 'telegram', chat_id: '1', user_name: 'Alice', user_id: '42' },
      'DM with Alice',
    ],
    [
      'DM without a name falls back to the user id',
      { platform: 'telegram', chat_id: '1', user_id: '42' },
      'DM with 42',
    ],
    ['DM with nothing but a chat id', { platform: 'signal', chat_id: '+15550001' }, 'DM with +15550001'],
    ['DM with no ids at all', { platform: 'local', chat_id: '' }, 'DM'],
    [
      'group with a thread',
      {
        platform: 'telegram',
        chat_id: '-100',
        chat_type: 'group',
        chat_name: 'My Group',
        thread_id: '12345',
      },
      'group: My Group, thread: 12345',
    ],
    ['group without a name', { platform: 'telegram', chat_id: '-100', chat_type: 'group' }, 'group: -100'],
    [
      'channel',
      { platform: 'slack', chat_id: 'C1', chat_type: 'channel', chat_name: 'general' },
      'channel: general',
    ],
    ['unnamed channel without id', { platform: 'slack', chat_id: '', chat_type: 'channel' }, 'channel'],
    [
      'thread chat',
      { platform: 'discord', chat_id: '99', chat_type: 'thread', chat_name: 'bug triage', thread_id: '99' },
      'thread: bug triage',
    ],
    ['thread chat without name', { platform: 'discord', chat_id: '99', chat_type: 'thread' }, 'thread: 99'],
    [
      'DM thread',
      { platform: 'telegram', chat_id: '1', user_name: 'Bob', thread_id: 't7' },
      'DM with Bob, thread: t7',
    ],
  ];
  for (const [name, init, expected] of cases) {
    it(name, () => {
      expect(new SessionSource(init).description).toBe(expected);
    });
  }
});

describe('SRC-1 SessionSource bad input', () => {
  it('rejects malformed JSON text', () => {
    expectInvalid(() => SessionSource.parse('{"platform":'), null, 'not valid JSON');
  });

  it('rejects a JSON value that is not an object', () => {
    expectInvalid(() => SessionSource.parse('["telegram"]'), null, 'must be a JSON object');
    expectInvalid(() => SessionSource.fromJSON(null), null, 'must be a JSON object');
  });

  it('rejects an unknown chat_type, naming the allowed ones', () => {
    expectInvalid(
      () => SessionSource.parse('{"platform":"telegram","chat_id":"1","chat_type":"room"}'),
      'chat_type',
      'chat_type must be one of dm, group, channel, thread, got string "room"',
    );
  });

  it('rejects wrong field types, naming the field', () => {
    expectInvalid(
      () => SessionSource.fromJSON({ platform: 'x', chat_id: 7 }),
      'chat_id',
      'chat_id must be a string',
    );
    expectInvalid(
      () => SessionSource.fromJSON({ platform: 'x', chat_id: '1', user_id: 5 }),
      'user_id',
      'user_id must be a string or null, got number 5',
    );
    expectInvalid(
      () => SessionSource.fromJSON({ platform: 'x', chat_id: '1', is_bot: 'yes' }),
      'is_bot',
      'is_bot must be a boolean',
    );
  });

  it('rejects missing required fields and an empty platform', () => {
    expectInvalid(() => SessionSource.fromJSON({ chat_id: '1' }), 'platform', 'platform is required');
    expectInvalid(() => SessionSource.fromJSON({ platform: 'x' }), 'chat_id', 'chat_id is required');
    expectInvalid(() => SessionSource.fromJSON({ platform: '', chat_id: '1' }), 'platform', 'non-empty');
  });

  it('rejects unknown keys', () => {
    expectInvalid(
      () => SessionSource.fromJSON({ platform: 'x', chat_id: '1', chatid: '2' }),
      'chatid',
      'unknown field(s): chatid',
    );
  });
});
