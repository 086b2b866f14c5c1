/**
 * REC-7 on a chat platform, end to end: the real daemon with its Telegram adapter on the loopback
 * Bot API stand-in, SIGKILLed at a step boundary of a chat turn (by the test, or by a fault point)
 * and restarted. The chat is told its turn resumed. A turn waiting for an approval shows the same
 * prompt again under a new generation, with new buttons, and its old message's buttons are edited
 * away (an old button is refused as stale); a question is asked again and the answer reaches the
 * model; a stored tool call that never started runs once after the restart; a turn at a model call
 * calls the model again with exactly the stored history; a tool that was running is never run
 * again. Each command appends a line to a log the test owns, so "once" is counted.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { STALE_APPROVAL_ANSWER } from '../../src/domain/messaging/chat-commands.js';
import { parseCallbackData } from '../../src/surfaces/platforms/telegram/approvals.js';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import { REPLACED_PROMPT_LINE } from '../../src/domain/messaging/turn-prompts.js';
import { RESUME_NOTE, resumedNotice } from '../../src/domain/messaging/turn.js';
import type { BotCall } from '../fixtures/telegram-standin.js';
import { exited } from './cli.js';
import { waitForShownPrompt } from './prompt-record.js';
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

/** The prompt a keyboard's first button answers. */
const bindingOf = (call: BotCall) =>
  parseCallbackData(keyboardOf(call).inline_keyboard[0]![0]!.callback_data)!.prompt;

/** What the chat shows now for a message the bot sent (its text and keyboard, after any edit). */
const nowShown = (chatId: number, call: BotCall) => tg.standIn.shown(chatId, tg.standIn.sentId(call));

describe('REC-7 chat-platform turns resume at their last durable step', { timeout: 120_000 }, () => {
  it('an approval pending at a SIGKILL is asked again: same prompt id, new generation; the old buttons are edited away and refused; approved, the command runs once, one reply', async () => {
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
    await waitForShownPrompt(tg.daemon!);
    await tg.kill();
    expect(fs.existsSync(doomed)).toBe(true);

    await tg.start();
    // The chat is told, then the same prompt (same id) is shown again under the next generation.
    await tg.waitForText(chat.id, /^The gateway restarted while it was answering/);
    const again = await approvalMessage(chat.id, 2);
    expect(again.payload.text).toBe(asked.payload.text);
    expect(bindingOf(again)).toEqual({ ...bindingOf(asked), execution_generation: 2 });
    expect(tg.repliesTo(chat.id)).toContain(resumedNotice('approval', false));
    // The old message no longer offers buttons and says it was replaced.
    await vi.waitFor(() => expect(nowShown(chat.id, asked)?.reply_markup).toBeUndefined(), {
      timeout: 30_000,
    });
    expect(nowShown(chat.id, asked)?.text).toMatch(/Replaced: the gateway restarted/);
    // A click on an old button (a chat open since before the edit) answers nothing: refused as stale.
    const old = keyboardOf(asked).inline_keyboard[0]![0]!.callback_data;
    standIn.click(chat.id, standIn.sentId(asked), OWNER, old);
    expect(await tg.waitForText(chat.id, /^That button belongs to an approval asked before/)).toBe(
      STALE_APPROVAL_ANSWER,
    );
    expect(fs.existsSync(doomed)).toBe(true);
    expect(runs(log)).toEqual([]);
    const once = keyboardOf(again).inline_keyboard[0]![0]!.callback_data;
    standIn.click(chat.id, standIn.sentId(again), OWNER, once);
    await tg.waitForText(chat.id, TOOL_REPLY);
    expect(fs.existsSync(doomed)).toBe(false);
    expect(runs(log)).toEqual(['ran']);
    // The turn went on where it stood: no restart note, and exactly one reply to the chat.
    expect(continuedWithNote(doomed)).toBe(0);
    expect(tg.repliesTo(chat.id).filter((t) => TOOL_REPLY.test(t))).toHaveLength(1);
    await vi.waitFor(() => expect(nowShown(chat.id, again)?.text).toMatch(/Answered: approved once\.$/), {
      timeout: 30_000,
    });
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
    // Told it resumed, then the one reply.
    const replies = tg.repliesTo(chat.id).slice(before);
    expect(replies).toHaveLength(2);
    expect(replies[0]).toBe(resumedNotice('tool', false));
    expect(replies[1]).toMatch(TOOL_REPLY);
  });

  it('a turn killed while the model was answering calls the model again with exactly the stored history; one reply, no restart note', async () => {
    const chat = dm(OWNER.id);
    const { model, standIn } = tg;
    if (tg.daemon === null) await tg.start();
    const before = tg.repliesTo(chat.id).length;
    const seen = model.requests.length;
    model.hold();
    standIn.inject({ chat, from: OWNER, text: 'answer me at the model' });
    await model.waitForRequests(seen + 1);
    const cut = model.requests[seen]!.body?.messages ?? [];
    await tg.kill();
    model.release();

    await tg.start();
    await tg.waitForText(chat.id, /you said: answer me at the model$/);
    // The repeated call saw the very messages the interrupted one did: no restart note added.
    const again = model.requests
      .slice(seen + 1)
      .find((r) => JSON.stringify(r.body?.messages).includes('answer me at'));
    expect(again?.body?.messages).toEqual(cut);
    expect(continuedWithNote('answer me at the model')).toBe(0);
    expect(tg.repliesTo(chat.id).slice(before)).toEqual([
      resumedNotice('model', false),
      `${DEMO_LABEL}: you said: answer me at the model`,
    ]);
  });

  it('a turn killed after its tool result was stored (the next model call held) goes on with a model call on the stored result; the tool is not run again', async () => {
    const chat = dm(OWNER.id);
    const { model, standIn } = tg;
    const log = path.join(scratch, 'stored.log');
    if (tg.daemon === null) await tg.start();
    const before = tg.repliesTo(chat.id).length;
    const toolReplies = tg.repliesTo(chat.id).filter((t) => TOOL_REPLY.test(t)).length;
    const seen = model.requests.length;
    // The command sleeps a little after its line, so the model is held before its result arrives.
    standIn.inject({ chat, from: OWNER, text: `run: echo ran >> ${log}; sleep 1` });
    await vi.waitFor(() => expect(runs(log)).toEqual(['ran']), { timeout: 30_000, interval: 20 });
    model.hold();
    await model.waitForRequests(seen + 2); // the call after the stored result, held
    const cut = model.requests[seen + 1]!.body?.messages ?? [];
    expect(cut.at(-1)?.role).toBe('tool');
    await tg.kill();
    model.release();

    await tg.start();
    await tg.waitForText(chat.id, TOOL_REPLY, toolReplies + 1);
    const again = model.requests
      .slice(seen + 2)
      .find((r) => JSON.stringify(r.body?.messages).includes('stored.log'));
    expect(again?.body?.messages).toEqual(cut);
    expect(runs(log)).toEqual(['ran']);
    expect(continuedWithNote(log)).toBe(0);
    const replies = tg.repliesTo(chat.id).slice(before);
    expect(replies).toHaveLength(2);
    expect(replies[0]).toBe(resumedNotice('model', false));
    expect(replies[1]).toMatch(TOOL_REPLY);
  });

  it('clarify across a SIGKILL: asked, killed, asked again (the old question marked replaced), answered, the answer reaches the next model request', async () => {
    const chat = dm(OWNER.id);
    const { standIn } = tg;
    if (tg.daemon === null) await tg.start();
    standIn.inject({ chat, from: OWNER, text: 'ask: which colour? [red|blue]' });
    const question = /^which colour\?\n\nChoices: red, blue/;
    await tg.waitForText(chat.id, question);
    const first = tg
      .sentTo(chat.id)
      .filter((c) => question.test(String(c.payload.text)))
      .at(-1)!;
    await waitForShownPrompt(tg.daemon!);
    await tg.kill();

    await tg.start();
    await tg.waitForText(chat.id, question, 2);
    expect(tg.repliesTo(chat.id)).toContain(resumedNotice('clarify', false));
    await vi.waitFor(() => expect(nowShown(chat.id, first)?.text).toContain(REPLACED_PROMPT_LINE), {
      timeout: 30_000,
    });
    standIn.inject({ chat, from: OWNER, text: 'blue' });
    await tg.waitForText(chat.id, /the tool `clarify` returned:\nThe user answered: blue$/);
    const last = tg.model.requests.at(-1)!.body?.messages ?? [];
    expect(last.at(-1)).toMatchObject({ role: 'tool', content: 'The user answered: blue' });
    expect(continuedWithNote('which colour')).toBe(0);
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
    expect(tg.repliesTo(chat.id).slice(before)).toEqual([resumedNotice('model', true), reply]);
    expect(runs(log)).toEqual(['ran']);
  });
});
