/**
 * The Telegram adapter inside the real daemon, configured with `group_sessions_per_user: false`:
 * a group is one conversation shared by its members. Also what happens while a turn runs: queued
 * messages, /stop, and approvals answered in the chat. The model is held at the demo model's
 * barrier to keep a turn running; nothing waits on a timer.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useTelegramDaemon } from './telegram-fixture.js';

const tg = useTelegramDaemon({ telegramYaml: ['    group_sessions_per_user: false'] });

const GROUP = { id: -100999, type: 'supergroup' as const, title: 'Crew' };
const QUILLA = { id: 31, first_name: 'Quilla' };
const RORIK = { id: 32, first_name: 'Rorik' };

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'gh-e2e-approvals-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe('KEY-3 a Telegram group shared by its members (group_sessions_per_user: false)', () => {
  it('runs both members in one session, each message prefixed with its sender', async () => {
    await tg.start();
    expect(await tg.ask(GROUP, QUILLA, 'apple from quilla')).toMatch(/you said: apple from quilla$/);
    expect(await tg.ask(GROUP, RORIK, 'banana from rorik')).toMatch(/you said: banana from rorik$/);
    expect(tg.userMessages('banana from rorik')).toEqual([
      '[Quilla] apple from quilla',
      '[Rorik] banana from rorik',
    ]);
    // The system prompt names neither member and is byte-identical across the two turns.
    const system = (marker: string) => (JSON.parse(tg.requestTexts(marker)) as { content: string }[])[0]!;
    expect(system('banana from rorik').content).toBe(system('apple from quilla').content);
    expect(system('banana from rorik').content).not.toMatch(/Quilla|Rorik/);
  });
});

describe('QUE-1 QUE-2 while a turn runs', () => {
  it('queues what arrives during a turn and answers each once, in order, after it', async () => {
    const { model, standIn } = tg;
    const seen = model.requests.length;
    model.hold();
    standIn.inject({ chat: GROUP, from: QUILLA, text: 'first while idle' });
    await model.waitForRequests(seen + 1);
    // Rorik's message waits in the slot; Quilla's /queue item goes behind it.
    standIn.inject({ chat: GROUP, from: RORIK, text: 'second during the turn' });
    expect(await tg.ask(GROUP, QUILLA, '/queue third as its own turn')).toBe('Queued (2 waiting).');
    expect(model.requests.length).toBe(seen + 1);
    model.release();
    await tg.waitForText(GROUP.id, /you said: third as its own turn$/);
    // A later message is answered after everything queued before it; had anything been answered
    // twice, the duplicate would be in the list by then.
    expect(await tg.ask(GROUP, RORIK, 'fourth')).toMatch(/you said: fourth$/);
    const answers = tg
      .repliesTo(GROUP.id)
      .slice(2)
      .map((t) => t.replace(/^.*you said: /s, ''));
    expect(answers).toEqual([
      'Queued (2 waiting).',
      'first while idle',
      'second during the turn',
      'third as its own turn',
      'fourth',
    ]);
    // Each ran as a turn of the shared session, seeing what came before it.
    expect(tg.userMessages('third as its own turn').slice(-3)).toEqual([
      '[Quilla] first while idle',
      '[Rorik] second during the turn',
      '[Quilla] third as its own turn',
    ]);
  });

  it('/stop interrupts the running turn: no reply to it, and the next message starts afresh', async () => {
    const chat = { id: 701, type: 'private' as const };
    const user = { id: 701, first_name: 'Sam' };
    const { model, standIn } = tg;
    const seen = model.requests.length;
    model.hold();
    standIn.inject({ chat, from: user, text: 'a very long task' });
    await model.waitForRequests(seen + 1);
    expect(await tg.ask(chat, user, '/stop')).toBe('Stopped.');
    model.release();
    // The lane runs one turn at a time: once this is answered, the stopped turn has ended for good.
    expect(await tg.ask(chat, user, 'after the stop')).toMatch(/you said: after the stop$/);
    expect(tg.repliesTo(chat.id)).toEqual(['Stopped.', expect.stringMatching(/you said: after the stop$/)]);
    expect(tg.userMessages('after the stop')).toEqual(['after the stop']);
  });

  it('a dangerous command runs only after /approve in the chat; /deny refuses the next one', async () => {
    const chat = { id: 702, type: 'private' as const };
    const user = { id: 702, first_name: 'Ola' };
    const doomed = path.join(scratch, 'doomed');
    const kept = path.join(scratch, 'kept');
    fs.mkdirSync(doomed);
    fs.writeFileSync(path.join(doomed, 'file.txt'), 'x');
    fs.mkdirSync(kept);

    // Asked with buttons (telegram-approvals.test.ts); a typed /approve answers it as well.
    expect(await tg.ask(chat, user, `run: rm -rf ${doomed}`)).toMatch(
      /^Approval needed: deletes files recursively/,
    );
    expect(fs.existsSync(doomed)).toBe(true);
    expect(await tg.ask(chat, user, '/approve')).toBe('Approved.');
    await tg.waitForText(chat.id, /the tool `terminal` returned/);
    expect(fs.existsSync(doomed)).toBe(false);
    expect(await tg.ask(chat, user, '/approve')).toBe('No approval is waiting.');

    expect(await tg.ask(chat, user, `run: rm -rf ${kept}`)).toMatch(/^Approval needed/);
    expect(await tg.ask(chat, user, '/deny')).toBe('Denied.');
    const result = await tg.waitForText(chat.id, /the tool `terminal` returned/, 2);
    expect(result).toMatch(/denied/i);
    expect(fs.existsSync(kept)).toBe(true);
  });
});
