/**
 * REC-7 on a chat platform, end to end: the real daemon with its Telegram adapter on the loopback
 * Bot API stand-in, SIGKILLed at a step boundary of a chat turn (by the test, or by a fault point)
 * and restarted. A turn waiting for an approval shows the same prompt again, with its buttons; a
 * stored tool call that never started runs once after the restart; a tool that was running is
 * never run again. Each command appends a line to a log the test owns, so "once" is counted.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { RESUME_NOTE } from '../../src/surfaces/platforms/turn.js';
import type { BotCall } from '../fixtures/telegram-standin.js';
import { exited } from './cli.js';
import { useTelegramDaemon } from './telegram-fixture.js';

const OWNER = { id: 51, first_name: 'Ines' };
const dm = (id: number) => ({ id, type: 'private' as const });
const tg = useTelegramDaemon({ telegramYaml: [`    allowed_user_ids: ['${OWNER.id}']`] });

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'gh-e2e-tg-resume-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

type Keyboard = { inline_keyboard: { text: string; callback_data: string }[][] };
const keyboardOf = (call: BotCall) => call.payload.reply_markup as Keyboard;
const approvalMessage = (chatId: number, n: number) =>
  tg.standIn.waitForCall(
    (c) => c.method === 'sendMessage' && c.payload.chat_id === chatId && c.payload.reply_markup !== undefined,
    n,
  );
const TOOL_REPLY = /the tool `terminal` returned/;

/** The lines the commands appended to `log`: one per execution. */
const runs = (log: string) =>
  fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];

/** Model requests that continued a turn about `marker` with the restart note (REC-4), not a resume. */
const continuedWithNote = (marker: string) =>
  tg.model.requests.filter((r) => {
    const messages = r.body?.messages ?? [];
    const users = messages.filter((m) => m.role === 'user');
    return users.at(-1)?.content === RESUME_NOTE && JSON.stringify(messages).includes(marker);
  }).length;

describe('REC-7 chat-platform turns resume at their last durable step', () => {
  it('an approval pending at a SIGKILL is shown again with the same prompt id; approved by button, the command runs once, one reply', async () => {
    const { standIn } = tg;
    const chat = dm(OWNER.id);
    await tg.start();
    const doomed = path.join(scratch, 'doomed');
    const log = path.join(scratch, 'approval.log');
    fs.mkdirSync(doomed);
    fs.writeFileSync(path.join(doomed, 'file.txt'), 'x');
    const command = `echo ran >> ${log}; rm -rf ${doomed}`;
    standIn.inject({ chat, from: OWNER, text: `run: ${command}` });
    const asked = await approvalMessage(chat.id, 1);
    expect(String(asked.payload.text)).toMatch(/^Approval needed: /);
    await tg.kill();
    expect(fs.existsSync(doomed)).toBe(true);

    await tg.start();
    // The same prompt (same id, so the same button data), shown again with its buttons.
    const again = await approvalMessage(chat.id, 2);
    expect(again.payload.text).toBe(asked.payload.text);
    expect(keyboardOf(again)).toEqual(keyboardOf(asked));
    const once = keyboardOf(again).inline_keyboard[0]![0]!.callback_data;
    standIn.click(chat.id, standIn.sentId(again), OWNER, once);
    await tg.waitForText(chat.id, TOOL_REPLY);
    expect(fs.existsSync(doomed)).toBe(false);
    expect(runs(log)).toEqual(['ran']);
    // The turn went on where it stood: no restart note, and exactly one reply to the chat.
    expect(continuedWithNote(doomed)).toBe(0);
    expect(tg.repliesTo(chat.id).filter((t) => TOOL_REPLY.test(t))).toHaveLength(1);
    // A later message is answered normally, and the command was not run again meanwhile.
    expect(await tg.ask(chat, OWNER, 'and after')).toMatch(/you said: and after$/);
    expect(runs(log)).toEqual(['ran']);
  });

  it('a tool call stored but not started when the daemon died (fault tool.recorded) runs once after the restart', async () => {
    await tg.kill();
    tg.reconfigure(['approvals:', '  mode: off']);
    const chat = dm(OWNER.id);
    const log = path.join(scratch, 'recorded.log');
    const daemon = await tg.start({ GATEHOUSE_TEST_FAULTS: 'tool.recorded' });
    const before = tg.repliesTo(chat.id).length;
    tg.standIn.inject({ chat, from: OWNER, text: `run: echo ran >> ${log}` });
    await exited(daemon.child); // killed itself with the call stored, before the tool started
    await tg.kill();
    expect(runs(log)).toEqual([]);

    await tg.start();
    await tg.waitForText(chat.id, TOOL_REPLY, 2);
    expect(runs(log)).toEqual(['ran']);
    expect(continuedWithNote(log)).toBe(0);
    expect(tg.repliesTo(chat.id).slice(before)).toHaveLength(1);
  });

  it('a tool that was running when the daemon died is not run again; the chat is answered once, with the restart note', async () => {
    const chat = dm(OWNER.id);
    const log = path.join(scratch, 'running.log');
    if (tg.daemon === null) await tg.start();
    const before = tg.repliesTo(chat.id).length;
    tg.standIn.inject({ chat, from: OWNER, text: `run: echo ran >> ${log}; sleep 3` });
    // The line exists: the tool's process was spawned, so its started mark was durable before.
    await vi.waitFor(() => expect(runs(log)).toEqual(['ran']), { timeout: 30_000, interval: 50 });
    await tg.kill();

    await tg.start();
    await tg.waitForText(chat.id, /Continue where you left off/);
    expect(continuedWithNote(log)).toBeGreaterThan(0);
    expect(tg.repliesTo(chat.id).slice(before)).toHaveLength(1);
    expect(await tg.ask(chat, OWNER, 'still there')).toMatch(/you said: still there$/);
    expect(runs(log)).toEqual(['ran']);
  });

  it('recovery.running_tool close: the same turn goes on with the honest result, the tool not run again, one reply', async () => {
    await tg.kill();
    tg.reconfigure(['approvals:', '  mode: off', 'recovery:', '  running_tool: close']);
    const chat = dm(OWNER.id);
    const log = path.join(scratch, 'closed.log');
    await tg.start();
    const before = tg.repliesTo(chat.id).length;
    tg.standIn.inject({ chat, from: OWNER, text: `run: echo ran >> ${log}; sleep 3` });
    await vi.waitFor(() => expect(runs(log)).toEqual(['ran']), { timeout: 30_000, interval: 50 });
    await tg.kill();

    await tg.start();
    const reply = await tg.waitForText(chat.id, /\[gateway restarted\]/);
    expect(reply).toMatch(TOOL_REPLY);
    expect(continuedWithNote(log)).toBe(0);
    expect(tg.repliesTo(chat.id).slice(before)).toEqual([reply]);
    expect(runs(log)).toEqual(['ran']);
  });
});
