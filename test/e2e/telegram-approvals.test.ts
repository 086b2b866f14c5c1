/**
 * Approvals as inline keyboards on Telegram, through the real daemon: the buttons bind the exact
 * prompt, a click by someone the allow-list does not admit is refused with an alert, the owner's
 * click runs the command once, and the message is edited with the outcome (keyboard removed)
 * however the approval was settled, a typed /deny included. A stale button answers nothing newer.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BotCall } from '../fixtures/telegram-standin.js';
import { useTelegramDaemon } from './telegram-fixture.js';

const OWNER = { id: 41, first_name: 'Ines' };
const STRANGER = { id: 42, first_name: 'Mallory' };
const GROUP = { id: -100777, type: 'supergroup' as const, title: 'Ops' };

const tg = useTelegramDaemon({ telegramYaml: [`    allowed_user_ids: ['${OWNER.id}']`] });

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'gh-e2e-tg-buttons-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

type Keyboard = { inline_keyboard: { text: string; callback_data: string }[][] };
const keyboardOf = (call: BotCall) => call.payload.reply_markup as Keyboard;
const approvalMessage = (n: number) =>
  tg.standIn.waitForCall(
    (c) =>
      c.method === 'sendMessage' && c.payload.chat_id === GROUP.id && c.payload.reply_markup !== undefined,
    n,
  );
const settledEdit = (messageId: number) =>
  tg.standIn.waitForCall((c) => c.method === 'editMessageText' && c.payload.message_id === messageId);

describe('Telegram approvals as inline keyboards', () => {
  it('a stranger is refused, the owner approves once, and the buttons give way to the outcome', async () => {
    const { standIn } = tg;
    await tg.start();
    const doomed = path.join(scratch, 'doomed');
    fs.mkdirSync(doomed);
    fs.writeFileSync(path.join(doomed, 'file.txt'), 'x');
    standIn.inject({ chat: GROUP, from: OWNER, text: `run: rm -rf ${doomed}` });
    const asked = await approvalMessage(1);
    expect(String(asked.payload.text)).toMatch(/^Approval needed: deletes files recursively/);
    const keyboard = keyboardOf(asked);
    expect(keyboard.inline_keyboard.map((row) => row.map((b) => b.text))).toEqual([
      ['Approve once', 'Approve for session'],
      ['Always approve', 'Deny'],
    ]);
    for (const button of keyboard.inline_keyboard.flat()) {
      expect(Buffer.byteLength(button.callback_data)).toBeLessThanOrEqual(64);
    }
    const once = keyboard.inline_keyboard[0]![0]!.callback_data;
    const messageId = standIn.sentId(asked);

    // Not on the allow-list: an alert only they see, and nothing reaches the gateway.
    const refused = standIn.click(GROUP.id, messageId, STRANGER, once);
    expect(await standIn.waitForAnswer(standIn.queryId(refused))).toEqual({
      callback_query_id: standIn.queryId(refused),
      text: 'You are not allowed to do this here.',
      show_alert: true,
    });
    expect(fs.existsSync(doomed)).toBe(true);
    expect(standIn.shown(GROUP.id, messageId)?.reply_markup).toEqual(keyboard);

    const click = standIn.click(GROUP.id, messageId, OWNER, once);
    expect(await tg.waitForText(GROUP.id, /^Approved\.$/)).toBe('Approved.');
    const edited = await settledEdit(messageId);
    expect(String(edited.payload.text)).toMatch(/^Approval needed[\s\S]*\n\nAnswered: approved once\.$/);
    expect(edited.payload.reply_markup).toEqual({ inline_keyboard: [] });
    expect(standIn.shown(GROUP.id, messageId)).toEqual({
      text: String(edited.payload.text),
      reply_markup: undefined,
    });
    await tg.waitForText(GROUP.id, /the tool `terminal` returned/);
    expect(fs.existsSync(doomed)).toBe(false);
    expect((await standIn.waitForAnswer(standIn.queryId(click))).text).toBeNull();

    // The next approval: the old button (clicked again, say after a crash) answers nothing newer,
    // and a typed /deny settles the new one, which is edited the same way.
    const kept = path.join(scratch, 'kept');
    fs.mkdirSync(kept);
    standIn.inject({ chat: GROUP, from: OWNER, text: `run: rm -rf ${kept}` });
    const second = await approvalMessage(2);
    const secondId = standIn.sentId(second);
    expect(keyboardOf(second).inline_keyboard[0]![0]!.callback_data).not.toBe(once);
    standIn.click(GROUP.id, messageId, OWNER, once);
    expect(await tg.waitForText(GROUP.id, /^That approval is no longer open\.$/)).toBeTruthy();
    expect(fs.existsSync(kept)).toBe(true);
    expect(standIn.shown(GROUP.id, secondId)?.reply_markup).toEqual(keyboardOf(second));

    standIn.inject({ chat: GROUP, from: OWNER, text: '/deny' });
    expect(await tg.waitForText(GROUP.id, /^Denied\.$/)).toBe('Denied.');
    const denied = await settledEdit(secondId);
    expect(String(denied.payload.text)).toMatch(/\n\nAnswered: denied\.$/);
    expect(standIn.shown(GROUP.id, secondId)?.reply_markup).toBeUndefined();
    expect(await tg.waitForText(GROUP.id, /the tool `terminal` returned/, 2)).toMatch(/denied/i);
    expect(fs.existsSync(kept)).toBe(true);
  });
});
