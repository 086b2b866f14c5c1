/**
 * Issue 26 item 5 for chat-platform sessions, through the real daemon on a real small filesystem:
 * the home lives on a size-limited tmpfs, Telegram is the loopback Bot API stand-in. A chat's turn
 * ends while the disk is full, so its end (the answer, the reply on the ledger) is refused; a second
 * message waits behind it. Once the filler is removed the same daemon commits the turn, delivers its
 * reply and answers the second message, with no restart and no "something went wrong" in the chat.
 * Needs root (mount); skipped otherwise.
 */
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startDemoModel } from '../../src/runtime/demo/server.js';
import { startTelegramStandIn } from '../fixtures/telegram-standin.js';
import { requireBuild } from './cli.js';
import { startDaemon } from './gateway-harness.js';
import { canMount, fillDisk, mountSmallDisk, unmountSmallDisks } from './small-disk.js';

const closers: (() => Promise<unknown>)[] = [];
beforeAll(requireBuild);
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  unmountSmallDisks();
});

const DM = { id: 7001, type: 'private' as const };
const ANA = { id: 7001, first_name: 'Ana' };

describe.skipIf(!canMount)('a full disk that empties again, on a chat platform', () => {
  it(
    "resumes the chat's turn, its delivery and its queue once storage is back, without a restart",
    { timeout: 120_000 },
    async () => {
      const disk = mountSmallDisk('24m');
      const standIn = await startTelegramStandIn();
      closers.push(() => standIn.close());
      const demo = await startDemoModel();
      closers.push(() => demo.close());
      const home = join(disk, 'home');
      const daemon = await startDaemon({
        home,
        env: { GH_E2E_TELEGRAM_TOKEN: standIn.token },
        // The log mirrored to stderr: the test sees the refusal there (the log file is on the full disk).
        args: ['--log-stderr'],
        config: [
          `model: {base_url: ${JSON.stringify(demo.baseUrl)}, model: gatehouse-demo}`,
          'platforms:',
          '  telegram:',
          '    token_env: GH_E2E_TELEGRAM_TOKEN',
          `    api_root: ${standIn.apiRoot}`,
          '',
        ].join('\n'),
      });
      closers.push(() => daemon.stop());
      let stderr = '';
      daemon.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const logged = (text: string) =>
        new Promise<void>((resolve, reject) => {
          const check = () => {
            if (!stderr.includes(text)) return;
            daemon.child.stderr!.off('data', check);
            resolve();
          };
          daemon.child.stderr!.on('data', check);
          daemon.child.once('exit', (code) => reject(new Error(`the daemon exited (${code}): ${stderr}`)));
          check();
        });

      // The first turn's model call is held: the disk fills while it runs, and its answer (the
      // message twice, as reasoning and as text) needs more room than the write-ahead log holds.
      demo.hold();
      const big = `think: ${'x'.repeat(60_000)}`;
      standIn.inject({ chat: DM, from: ANA, text: big });
      await demo.waitForRequests(1);
      // The write-ahead log emptied first, as a checkpoint leaves it: the turn's end needs new room.
      const db = new Database(join(home, 'profiles', 'default', 'state.db'));
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
      const filler = fillDisk(disk);
      const refused = logged('storage_unavailable: chat ');
      demo.release();
      // The turn's end is refused while the disk is full: the chat waits (it is not told the turn
      // failed, as it was when the refusal ended the turn for good).
      const failed = standIn.waitForCall(
        (c) => c.method === 'sendMessage' && /went wrong|failed/i.test(String(c.payload.text)),
      );
      const stalled = await Promise.race([refused.then(() => 'waiting'), failed.then(() => 'failed')]);
      expect(stalled).toBe('waiting');
      // A second message arrives meanwhile and waits behind the first in the chat's queue.
      standIn.inject({ chat: DM, from: ANA, text: 'second' });

      // Space comes back: the same daemon commits the first turn, sends its reply, runs the second.
      const back = logged('the store is writable again: chat ');
      rmSync(filler);
      await back;
      const second = await standIn.waitForCall(
        (c) =>
          c.method === 'sendMessage' &&
          c.payload.chat_id === DM.id &&
          String(c.payload.text).endsWith('you said: second'),
      );
      expect(second).toBeDefined();
      const replies = standIn.sent((c) => c.payload.chat_id === DM.id).map((c) => String(c.payload.text));
      // The first answer came first (in pieces: Telegram's limit), and nothing said the turn failed.
      expect(replies[0]).toMatch(/^Demo model \(scripted stand-in\): you said: x+/);
      expect(replies.join('')).toContain('x'.repeat(60_000));
      expect(replies.some((text) => /went wrong|failed/i.test(text))).toBe(false);
      expect(replies.at(-1)).toMatch(/you said: second$/);
      expect(demo.requests.length).toBe(2);
    },
  );
});
