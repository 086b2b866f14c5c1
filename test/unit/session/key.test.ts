import { describe, expect, it } from 'vitest';
import {
  buildSessionKey,
  canonicalWhatsAppIdentifier,
  decodeKeyComponent,
  isSharedMultiUserSession,
  SessionSource,
} from '../../../src/index.js';

const src = (init: ConstructorParameters<typeof SessionSource>[0]) => new SessionSource(init);

// The seed's example tokens `thread_678` and `user_abc` are read as a marker plus an id: thread 678
// and participant abc (docs/session-model.md, "Markers").
describe('KEY-1 session keys: seed 002 §4 DM rows', () => {
  it('DM with a chat_id', () => {
    expect(buildSessionKey(src({ platform: 'telegram', chat_id: '12345', user_id: '12345' }))).toBe(
      'agent:main:telegram:dm:12345',
    );
  });
  it('DM with a chat_id and a thread', () => {
    expect(buildSessionKey(src({ platform: 'telegram', chat_id: '12345', thread_id: '678' }))).toBe(
      'agent:main:telegram:dm:12345:thread_678',
    );
  });
  it('DM without chat_id, with a participant', () => {
    expect(buildSessionKey(src({ platform: 'signal', chat_id: '', user_id: 'abc' }))).toBe(
      'agent:main:signal:dm:user_abc',
    );
  });
  it('DM with neither chat_id nor participant', () => {
    expect(buildSessionKey(src({ platform: 'telegram', chat_id: '' }))).toBe('agent:main:telegram:dm');
  });
  it('WhatsApp DM (canonicalised)', () => {
    const source = src({
      platform: 'whatsapp',
      chat_id: '15551234567@s.whatsapp.net',
      user_id: '15551234567:4@s.whatsapp.net',
    });
    expect(buildSessionKey(source)).toBe('agent:main:whatsapp:dm:15551234567');
  });
});

describe('KEY-1 session keys: seed 002 §4 group/channel rows', () => {
  it('group chat (shared, groupSessionsPerUser off)', () => {
    const source = src({
      platform: 'telegram',
      chat_id: '-10012345',
      chat_type: 'group',
      user_id: 'abc',
    });
    expect(buildSessionKey(source, { groupSessionsPerUser: false })).toBe(
      'agent:main:telegram:group:-10012345',
    );
  });
  it('group chat with no known sender', () => {
    const source = src({ platform: 'telegram', chat_id: '-10012345', chat_type: 'group' });
    expect(buildSessionKey(source)).toBe('agent:main:telegram:group:-10012345');
  });
  it('group chat, isolated per user (the default)', () => {
    const source = src({
      platform: 'telegram',
      chat_id: '-10012345',
      chat_type: 'group',
      user_id: 'abc',
    });
    expect(buildSessionKey(source)).toBe('agent:main:telegram:group:-10012345:user_abc');
  });
  it('thread in a group, shared (the default)', () => {
    const source = src({
      platform: 'discord',
      chat_id: '12345',
      chat_type: 'group',
      thread_id: '678',
      user_id: 'abc',
    });
    expect(buildSessionKey(source)).toBe('agent:main:discord:group:12345:thread_678');
  });
  it('thread in a group, per user', () => {
    const source = src({
      platform: 'discord',
      chat_id: '12345',
      chat_type: 'group',
      thread_id: '678',
      user_id: 'abc',
    });
    expect(buildSessionKey(source, { threadSessionsPerUser: true })).toBe(
      'agent:main:discord:group:12345:thread_678:user_abc',
    );
  });
  it('channel', () => {
    const source = src({ platform: 'slack', chat_id: 'C12345', chat_type: 'channel' });
    expect(buildSessionKey(source)).toBe('agent:main:slack:channel:C12345');
  });
  it('WhatsApp group (canonicalised)', () => {
    const source = src({
      platform: 'whatsapp',
      chat_id: '120363012345678901@g.us',
      chat_type: 'group',
      user_id: '+1 (555) 123-4567',
    });
    expect(buildSessionKey(source)).toBe('agent:main:whatsapp:group:120363012345678901:user_15551234567');
  });
});

describe('KEY-1 participant choice and per-user isolation', () => {
  const group = { platform: 'telegram', chat_id: '-100', chat_type: 'group' } as const;
  const channel = { platform: 'slack', chat_id: 'C1', chat_type: 'channel' } as const;
  const thread = { platform: 'discord', chat_id: '7', chat_type: 'group', thread_id: '70' } as const;

  it('prefers user_id_alt over user_id (Signal UUID over an ephemeral number)', () => {
    const source = src({ ...group, user_id: '+15550001', user_id_alt: 'uuid-1' });
    expect(buildSessionKey(source)).toBe('agent:main:telegram:group:-100:user_uuid-1');
    const dm = src({ platform: 'signal', chat_id: '', user_id: '+15550001', user_id_alt: 'uuid-1' });
    expect(buildSessionKey(dm)).toBe('agent:main:signal:dm:user_uuid-1');
  });

  for (const [name, base] of [
    ['group', group],
    ['channel', channel],
  ] as const) {
    it(`${name}: isolation on gives each user a lane, off gives one shared lane`, () => {
      const alice = src({ ...base, user_id: 'alice' });
      const bob = src({ ...base, user_id: 'bob' });
      expect(buildSessionKey(alice)).not.toBe(buildSessionKey(bob));
      expect(buildSessionKey(alice, { groupSessionsPerUser: false })).toBe(
        buildSessionKey(bob, { groupSessionsPerUser: false }),
      );
      // Thread isolation does not touch thread-less chats.
      expect(buildSessionKey(alice, { threadSessionsPerUser: true })).toBe(buildSessionKey(alice));
    });
  }

  it('thread: shared by default, one lane per user when threadSessionsPerUser', () => {
    const alice = src({ ...thread, user_id: 'alice' });
    const bob = src({ ...thread, user_id: 'bob' });
    expect(buildSessionKey(alice)).toBe(buildSessionKey(bob));
    expect(buildSessionKey(alice, { threadSessionsPerUser: true })).not.toBe(
      buildSessionKey(bob, { threadSessionsPerUser: true }),
    );
    // Group isolation does not reach into threads.
    expect(buildSessionKey(alice, { groupSessionsPerUser: false })).toBe(buildSessionKey(alice));
  });

  it('DMs ignore both settings and never append a participant after a chat_id', () => {
    const dm = src({ platform: 'telegram', chat_id: '555', user_id: '555' });
    for (const groupSessionsPerUser of [true, false]) {
      for (const threadSessionsPerUser of [true, false]) {
        expect(buildSessionKey(dm, { groupSessionsPerUser, threadSessionsPerUser })).toBe(
          'agent:main:telegram:dm:555',
        );
      }
    }
  });

  it('fields that do not name a lane do not change the key', () => {
    const base = src({ ...group, user_id: 'alice' });
    const decorated = base.with({
      user_name: 'Alice',
      chat_name: 'Ops',
      chat_topic: 'deploys',
      chat_id_alt: 'signal-internal-id',
      message_id: 'm1',
      is_bot: true,
      role_authorized: true,
      guild_id: 'g1',
      parent_chat_id: 'p1',
    });
    expect(buildSessionKey(decorated)).toBe(buildSessionKey(base));
  });
});

describe('KEY-1 escaping of reserved characters', () => {
  it('percent-encodes ":" and "%" inside components only', () => {
    const room = src({
      platform: 'matrix',
      chat_id: '!abc:example.org',
      chat_type: 'group',
      user_id: '@bob:example.org',
    });
    expect(buildSessionKey(room)).toBe('agent:main:matrix:group:!abc%3Aexample.org:user_@bob%3Aexample.org');
    const percent = src({ platform: 'telegram', chat_id: '50%', chat_type: 'channel' });
    expect(buildSessionKey(percent)).toBe('agent:main:telegram:channel:50%25');
  });

  it('keeps a Matrix room id from reading as a room plus a participant', () => {
    const a = src({ platform: 'matrix', chat_id: '!abc:example.org', chat_type: 'group' });
    const b = src({ platform: 'matrix', chat_id: '!abc', chat_type: 'group', user_id: 'example.org' });
    expect(buildSessionKey(a)).not.toBe(buildSessionKey(b));
  });

  it('tells an absent thread, an empty thread and a present one apart', () => {
    const base = { platform: 'telegram', chat_id: '1', chat_type: 'group' } as const;
    const keys = [null, '', '%', '%-'].map((thread_id) => buildSessionKey(src({ ...base, thread_id })));
    expect(keys).toEqual([
      'agent:main:telegram:group:1',
      'agent:main:telegram:group:1:thread_%',
      'agent:main:telegram:group:1:thread_%25',
      'agent:main:telegram:group:1:thread_%25-',
    ]);
  });

  it('marks thread and participant components, so a DM with only a thread reads as one', () => {
    const threadOnly = src({ platform: 'telegram', chat_id: '', thread_id: '9' });
    expect(buildSessionKey(threadOnly)).toBe('agent:main:telegram:dm:thread_9');
    expect(buildSessionKey(src({ platform: 'telegram', chat_id: '9' }))).toBe('agent:main:telegram:dm:9');
    const chatless = src({ platform: 'signal', chat_id: '', thread_id: '9', user_id: 'abc' });
    expect(buildSessionKey(chatless)).toBe('agent:main:signal:dm:thread_9:user_abc');
    const emptyIds = src({
      platform: 'telegram',
      chat_id: '',
      chat_type: 'group',
      thread_id: '',
      user_id: '',
    });
    expect(buildSessionKey(emptyIds, { threadSessionsPerUser: true })).toBe(
      'agent:main:telegram:group:%:thread_%:user_%',
    );
  });

  it('escapes a chat id that looks like a marked component, and only such a chat id', () => {
    const chat = (chat_id: string, extra: Partial<ConstructorParameters<typeof SessionSource>[0]> = {}) =>
      buildSessionKey(src({ platform: 'telegram', chat_id, ...extra }));
    expect(chat('thread_9')).toBe('agent:main:telegram:dm:thread%5F9');
    expect(chat('user_abc')).toBe('agent:main:telegram:dm:user%5Fabc');
    expect(chat('my_thread_9')).toBe('agent:main:telegram:dm:my_thread_9');
    expect(chat('thread%5F9')).toBe('agent:main:telegram:dm:thread%255F9');
    // The lanes these chat ids could otherwise be mistaken for.
    expect(chat('', { thread_id: '9' })).toBe('agent:main:telegram:dm:thread_9');
    expect(chat('', { user_id: 'abc' })).toBe('agent:main:telegram:dm:user_abc');
    expect(decodeKeyComponent('thread%5F9')).toBe('thread_9');
    expect(decodeKeyComponent('thread%255F9')).toBe('thread%5F9');
    expect(decodeKeyComponent('%')).toBe('');
  });

  it('keeps a DM named by chat id X apart from the chat-less DM of user X', () => {
    const byChat = src({ platform: 'signal', chat_id: 'abc' });
    const byUser = src({ platform: 'signal', chat_id: '', user_id: 'abc' });
    expect(buildSessionKey(byChat)).toBe('agent:main:signal:dm:abc');
    expect(buildSessionKey(byUser)).toBe('agent:main:signal:dm:user_abc');
  });

  it('escapes a plugin platform name that contains the separator', () => {
    expect(buildSessionKey(src({ platform: 'irc:libera', chat_id: '#x', chat_type: 'channel' }))).toBe(
      'agent:main:irc%3Alibera:channel:#x',
    );
  });
});

describe('KEY-2 WhatsApp identifiers converge to one lane', () => {
  const spellings = [
    '15551234567',
    '+15551234567',
    '+1 (555) 123-4567',
    '1-555-123-4567',
    '15551234567@s.whatsapp.net',
    '15551234567@c.us',
    '15551234567:12@s.whatsapp.net',
    '15551234567.0:3@s.whatsapp.net',
    '0015551234567',
  ];

  it('canonicalises every spelling of one number to its bare digits', () => {
    for (const spelling of spellings) expect(canonicalWhatsAppIdentifier(spelling)).toBe('15551234567');
  });

  it('gives every spelling the same DM key and the same group participant', () => {
    const dmKeys = new Set(
      spellings.map((chat_id) => buildSessionKey(src({ platform: 'whatsapp', chat_id }))),
    );
    expect([...dmKeys]).toEqual(['agent:main:whatsapp:dm:15551234567']);
    const groupKeys = new Set(
      spellings.map((user_id) =>
        buildSessionKey(
          src({ platform: 'whatsapp', chat_id: '120363000000000001@g.us', chat_type: 'group', user_id }),
        ),
      ),
    );
    expect(groupKeys.size).toBe(1);
  });

  it('joins a LID to its number when the alias is known, and keeps an unknown LID apart', () => {
    const lid = src({ platform: 'whatsapp', chat_id: '188480915300534@lid' });
    const phone = src({ platform: 'whatsapp', chat_id: '15551234567@s.whatsapp.net' });
    const aliases = new Map([['188480915300534', '+15551234567']]);
    expect(buildSessionKey(lid, { whatsAppLidAliases: aliases })).toBe(buildSessionKey(phone));
    expect(buildSessionKey(lid)).toBe('agent:main:whatsapp:dm:188480915300534@lid');
    expect(canonicalWhatsAppIdentifier('188480915300534:2@lid')).toBe('188480915300534@lid');
  });

  it('is idempotent and leaves other platforms alone', () => {
    for (const spelling of [...spellings, '188480915300534@lid', '120363000000000001@g.us', 'odd-id']) {
      const once = canonicalWhatsAppIdentifier(spelling);
      expect(canonicalWhatsAppIdentifier(once)).toBe(once);
    }
    expect(buildSessionKey(src({ platform: 'signal', chat_id: '+1 555' }))).toBe(
      'agent:main:signal:dm:+1 555',
    );
  });
});

describe('KEY-3 isSharedMultiUserSession (seed 002 §5)', () => {
  const cases = [
    ['DM is never shared', { chat_type: 'dm', thread_id: null }, {}, false],
    [
      'DM thread is never shared',
      { chat_type: 'dm', thread_id: 't' },
      { threadSessionsPerUser: false },
      false,
    ],
    ['group isolated by default', { chat_type: 'group', thread_id: null }, {}, false],
    [
      'group shared when isolation is off',
      { chat_type: 'group', thread_id: null },
      { groupSessionsPerUser: false },
      true,
    ],
    [
      'channel shared when isolation is off',
      { chat_type: 'channel', thread_id: null },
      { groupSessionsPerUser: false },
      true,
    ],
    ['thread shared by default', { chat_type: 'group', thread_id: 't' }, {}, true],
    [
      'thread isolated per user on request',
      { chat_type: 'group', thread_id: 't' },
      { threadSessionsPerUser: true },
      false,
    ],
    [
      'thread ignores the group setting',
      { chat_type: 'thread', thread_id: 't' },
      { groupSessionsPerUser: true },
      true,
    ],
  ] as const;
  for (const [name, source, options, expected] of cases) {
    it(name, () => {
      expect(isSharedMultiUserSession(source, options)).toBe(expected);
    });
  }
});
