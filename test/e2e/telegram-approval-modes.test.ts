/**
 * `approvals.mode` on a chat platform (issue 25, item 6), through the real daemon and the Telegram
 * stand-in: `deny` refuses what would ask without posting an approval, and the directory survives;
 * `off` runs it without asking. The same broker decision serves local sessions
 * (test/e2e/approvals-allowlist.test.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useTelegramDaemon } from './telegram-fixture.js';

const OWNER = { id: 61, first_name: 'Ines' };
const chat = { id: 61, type: 'private' as const };
const tg = useTelegramDaemon({ telegramYaml: [`    allowed_user_ids: ['${OWNER.id}']`] });

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'gh-e2e-tg-modes-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe('approvals.mode on Telegram', () => {
  it('deny: refused without an approval message, nothing deleted; off: runs without asking', async () => {
    tg.reconfigure(['approvals:', '  mode: deny']);
    await tg.start();
    const kept = path.join(scratch, 'kept');
    fs.mkdirSync(kept);
    fs.writeFileSync(path.join(kept, 'file.txt'), 'x');
    tg.standIn.inject({ chat, from: OWNER, text: `run: rm -rf ${kept}` });
    const told = await tg.waitForText(chat.id, /the tool `terminal` returned/);
    expect(told).toContain('Denied by configuration (approvals.mode: deny)');
    expect(fs.existsSync(path.join(kept, 'file.txt'))).toBe(true);
    expect(tg.repliesTo(chat.id).filter((t) => t.startsWith('Approval needed'))).toEqual([]);
    await tg.kill();

    tg.reconfigure(['approvals:', '  mode: off']);
    await tg.start();
    const before = tg.repliesTo(chat.id).filter((t) => /the tool `terminal` returned/.test(t)).length;
    tg.standIn.inject({ chat, from: OWNER, text: `run: rm -rf ${kept}` });
    await tg.waitForText(chat.id, /the tool `terminal` returned/, before + 1);
    expect(fs.existsSync(kept)).toBe(false);
    expect(tg.repliesTo(chat.id).filter((t) => t.startsWith('Approval needed'))).toEqual([]);
  });
});
