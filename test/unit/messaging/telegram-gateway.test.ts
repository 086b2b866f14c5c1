import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ALICE, BOB, createHarness, dmWith, GROUP, type Harness } from '../../fixtures/messaging-harness.js';

let h: Harness;

afterEach(async () => {
  await h?.dispose();
});

describe('Telegram through the MessagingGateway (KEY-1, KEY-3, QUE-1, ENT-2)', () => {
  beforeEach(async () => {
    h = await createHarness();
    h.build();
    await h.start();
  });

  it('answers a DM conversation and keeps one session across messages', async () => {
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'hello there' });
    await h.waitForText(ALICE.id, /you said: hello there/);
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'second' });
    await h.waitForText(ALICE.id, /you said: second/);
    const sessions = (await h.store.listSessions()).entries;
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.session_key).toBe('agent:main:telegram:dm:111');
    // The second request carried the first exchange: one conversation.
    const last = h.model.requests.at(-1)!.body!.messages!;
    expect(last.filter((m) => m.role === 'user')).toHaveLength(2);
  });

  it('isolates group members per user by default', async () => {
    h.standIn.inject({ chat: GROUP, from: ALICE, text: 'from alice' });
    await h.waitForText(GROUP.id, /from alice/);
    h.standIn.inject({ chat: GROUP, from: BOB, text: 'from bob' });
    await h.waitForText(GROUP.id, /from bob/);
    expect((await h.store.listSessions()).entries).toHaveLength(2);
  });

  it('a forum thread is one shared session; each user message carries its [sender]', async () => {
    h.standIn.inject({ chat: GROUP, from: ALICE, text: 'in topic', message_thread_id: 7 });
    const first = await h.waitForText(GROUP.id, /in topic/);
    expect(first.payload.message_thread_id).toBe(7);
    h.standIn.inject({ chat: GROUP, from: BOB, text: 'me too', message_thread_id: 7 });
    await h.waitForText(GROUP.id, /me too/);
    const entries = (await h.store.listSessions()).entries;
    expect(entries).toHaveLength(1);
    expect(entries[0]!.session_key).toBe('agent:main:telegram:thread:-100500:thread_7');
    const [a, b] = h.model.requests.map((r) => r.body!.messages!);
    // KEY-3: the system prompt is byte-identical across speakers and turns.
    expect(b![0]!.content).toBe(a![0]!.content);
    expect(String(a![0]!.content)).not.toContain('alice');
    expect(b!.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      '[alice] in topic',
      '[bob] me too',
    ]);
  });

  it('queues a message sent during a running turn and answers it after', async () => {
    h.model.hold();
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'first' });
    await h.model.waitForRequests(1);
    const burst = h.gateway.events.next('inbound:accepted', (e) => e.text === 'burst two');
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'burst one' });
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'burst two' });
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: '/queue queued item' });
    await h.waitForText(ALICE.id, /^Queued/);
    await burst;
    h.model.release();
    await h.waitForText(ALICE.id, /you said: queued item/);
    const replies = h.textsTo(ALICE.id).filter((t) => t.includes('you said'));
    // The burst collapsed into its newest message; the /queue item got its own turn, after it.
    expect(replies.map((t) => t.replace(/^.*you said: /s, ''))).toEqual([
      'first',
      'burst two',
      'queued item',
    ]);
  });

  it('/stop interrupts the running turn and the next message starts a fresh session', async () => {
    h.model.hold();
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'long task' });
    await h.model.waitForRequests(1);
    const before = (await h.store.listSessions()).entries[0]!.session_id;
    const followUp = h.gateway.events.next('inbound:accepted', (e) => e.text === 'follow-up');
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'follow-up' });
    await followUp;
    const done = h.gateway.events.next('turn:complete');
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: '/stop' });
    await h.waitForText(ALICE.id, /^Stopped\./);
    expect((await done).outcome).toBe('interrupted');
    h.model.release();
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'again' });
    await h.waitForText(ALICE.id, /you said: again/);
    // The follow-up was dropped by /stop; nothing else was answered.
    expect(h.textsTo(ALICE.id).filter((t) => t.includes('you said'))).toHaveLength(1);
    const after = (await h.store.listSessions()).entries[0]!;
    expect(after.session_id).not.toBe(before);
  });

  it('/new starts a new session id with is_fresh_reset and forgets the history', async () => {
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'remember me' });
    await h.waitForText(ALICE.id, /remember me/);
    const before = (await h.store.listSessions()).entries[0]!;
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: '/new' });
    await h.waitForText(ALICE.id, /new conversation/);
    const after = (await h.store.listSessions()).entries[0]!;
    expect(after.session_id).not.toBe(before.session_id);
    expect(after.is_fresh_reset).toBe(true);
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'fresh' });
    await h.waitForText(ALICE.id, /you said: fresh/);
    expect(h.model.requests.at(-1)!.body!.messages!.filter((m) => m.role === 'user')).toHaveLength(1);
  });

  it('a dangerous command waits for /approve in the chat, bound to that prompt', async () => {
    const fs = await import('node:fs');
    const path = await import('node:path');
    const target = path.join(h.dir, 'x');
    fs.mkdirSync(target);
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: `run: rm -rf ${target}` });
    await h.waitForText(ALICE.id, /^Approval needed/);
    expect(fs.existsSync(target)).toBe(true);
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: '/approve' });
    await h.waitForText(ALICE.id, /^Approved\./);
    await h.waitForText(ALICE.id, /the tool `terminal` returned/);
    expect(fs.existsSync(target)).toBe(false);
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: '/approve' });
    await h.waitForText(ALICE.id, /No approval is waiting/);
  });

  it('splits a reply longer than 4096 characters and waits out a 429', async () => {
    const long = Array.from({ length: 700 }, (_, i) => `word${i}`).join(' ');
    h.standIn.rateLimit('sendMessage', 1, 1);
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: long });
    await h.waitForText(ALICE.id, /word699$/);
    const pieces = h.textsTo(ALICE.id);
    expect(pieces.length).toBe(2);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(4096);
    expect(pieces.join(' ')).toContain(long);
  });

  it('retries a reply whose send failed, in the same run, without a recovered notice', async () => {
    // retry_after beyond what the adapter waits: the send fails and the reply stays owed.
    h.standIn.rateLimit('sendMessage', 1, 3600);
    const failed = h.gateway.events.next('delivery:failed');
    const delivered = h.gateway.events.next('delivery:sent');
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'try again' });
    await failed;
    expect((await delivered).recovered).toBe(false);
    const sent = await h.waitForText(ALICE.id, /you said: try again/);
    expect(String(sent.payload.text)).not.toMatch(/Recovered/);
    expect(await h.ledger.listUndelivered()).toEqual([]);
  });

  it('answers /help and /status, and /undo forgets the last exchange', async () => {
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'one' });
    await h.waitForText(ALICE.id, /you said: one/);
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: '/status' });
    await h.waitForText(ALICE.id, /idle, 0 waiting/);
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: '/undo' });
    await h.waitForText(ALICE.id, /Undid/);
    const entry = (await h.store.listSessions()).entries[0]!;
    expect(await h.store.loadTranscript(entry.session_id)).toHaveLength(0);
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: '/help' });
    await h.waitForText(ALICE.id, /^Commands:/);
  });
});

describe('Telegram group isolation off, allowlist', () => {
  it('one shared group session when group_sessions_per_user is false', async () => {
    h = await createHarness();
    h.build({ gateway: { keyOptions: { groupSessionsPerUser: false } } });
    await h.start();
    h.standIn.inject({ chat: GROUP, from: ALICE, text: 'a' });
    await h.waitForText(GROUP.id, /you said: a$/);
    h.standIn.inject({ chat: GROUP, from: BOB, text: 'b' });
    await h.waitForText(GROUP.id, /you said: b$/);
    expect((await h.store.listSessions()).entries).toHaveLength(1);
    const users = h.model.requests.at(-1)!.body!.messages!.filter((m) => m.role === 'user');
    expect(users.map((m) => m.content)).toEqual(['[alice] a', '[bob] b']);
  });

  it('ignores users outside allowed_user_ids', async () => {
    h = await createHarness({ allowedUserIds: [String(ALICE.id)] });
    h.build();
    await h.start();
    const refused = h.gateway.events.next('inbound:refused');
    h.standIn.inject({ chat: dmWith(BOB), from: BOB, text: 'let me in' });
    expect((await refused).user_id).toBe(String(BOB.id));
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'hi' });
    await h.waitForText(ALICE.id, /you said: hi/);
    expect(h.textsTo(BOB.id)).toEqual([]);
  });
});

describe('the typing indicator: shown once a turn has run its delay, never for a quicker one', () => {
  const typingTo = (chatId: number) =>
    h.standIn.calls.filter((c) => c.method === 'sendChatAction' && c.payload.chat_id === chatId);

  it('a turn still running after the delay shows "typing…"', async () => {
    h = await createHarness();
    h.build({ gateway: { typingDelayMs: 100 } });
    await h.start();
    h.model.hold();
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'think long' });
    const typing = await h.standIn.waitForCall((c) => c.method === 'sendChatAction');
    expect(typing.payload).toMatchObject({ chat_id: ALICE.id, action: 'typing' });
    h.model.release();
    await h.waitForText(ALICE.id, /you said: think long/);
  });

  it('a turn answered within the delay sends no indicator at all', async () => {
    h = await createHarness();
    h.build({ gateway: { typingDelayMs: 60_000 } });
    await h.start();
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'quick one' });
    await h.waitForText(ALICE.id, /you said: quick one/);
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'and another' });
    await h.waitForText(ALICE.id, /you said: and another/);
    expect(typingTo(ALICE.id)).toEqual([]);
  });
});
