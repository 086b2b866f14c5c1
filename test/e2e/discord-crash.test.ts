/**
 * REC-4, REC-7 and redelivery on Discord against the real daemon killed by SIGKILL. Discord
 * replays nothing to a fresh IDENTIFY, so what a restarted daemon answers comes from the turn it
 * resumes and from the REST catch-up after each channel's cursor; the inbound ledger keeps both to
 * once. An approval pending at the kill is asked again after the restart (same prompt id, next
 * generation), its old message's buttons disabled, and approved it runs its command once.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { STALE_APPROVAL_ANSWER } from '../../src/domain/messaging/chat-commands.js';
import { parseApprovalClick } from '../../src/surfaces/platforms/native-controls.js';
import type { RestCall } from '../fixtures/discord-standin.js';
import { waitForShownPrompt } from './prompt-record.js';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import { RESUME_NOTE, resumedNotice } from '../../src/domain/messaging/turn.js';
import { useDiscordDaemon } from './discord-fixture.js';
import { BACKENDS } from './gateway-harness.js';

const KIM = { id: '401', username: 'kim' };
const said = (text: string) => `${DEMO_LABEL}: you said: ${text}`;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'gh-e2e-dc-crash-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

type Buttons = { components: { custom_id: string; disabled: boolean }[] }[];
const buttonsOf = (call: RestCall) => (call.body.components as Buttons)[0]!.components;
/** The lines the command appended to `log`: one per execution. */
const runs = (log: string) =>
  fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];

describe.each(BACKENDS)('Discord crash recovery on %s', (store) => {
  const dc = useDiscordDaemon({ store });

  describe('Discord crash recovery through the real daemon', { timeout: 120_000 }, () => {
    it('a SIGKILL mid-turn: the turn is resumed once after restart and the chat gets exactly one reply', async () => {
      const { standIn, model } = dc;
      standIn.channel({ id: '600', type: 1 });
      await dc.start();
      expect(await dc.ask('600', KIM, 'before the crash')).toBe(said('before the crash'));
      const seen = model.requests.length;
      model.hold();
      standIn.say('600', KIM, 'mid-turn question');
      await model.waitForRequests(seen + 1);
      await dc.kill();
      model.release();
      await dc.start();
      await dc.waitForPost('600', /you said: mid-turn question$/);
      expect(await dc.ask('600', KIM, 'after restart')).toBe(said('after restart'));
      // Told it resumed, then one answer for the interrupted turn (its model call repeated on the
      // stored history, REC-7), none for the catch-up's redelivery.
      expect(dc.posts('600')).toEqual([
        said('before the crash'),
        resumedNotice('model', false),
        said('mid-turn question'),
        said('after restart'),
      ]);
      expect(dc.asked('mid-turn question')).toBe(2);
      expect(dc.asked(RESUME_NOTE)).toBe(0);
      expect(dc.asked('before the crash')).toBe(1);
    });

    // A channel's first message writes its cursor row before it is handed in, so even a daemon
    // killed right after its first answer there reads the channel back at the next start.
    it('what was said while the daemon was down is read back at start and answered once', async () => {
      const { standIn } = dc;
      await dc.kill();
      standIn.say('600', KIM, 'said while down');
      standIn.say('600', KIM, 'also while down');
      await dc.start();
      await dc.waitForPost('600', /also while down/);
      const posts = dc.posts('600');
      expect(posts.filter((p) => p.includes('while down'))).toEqual([
        said('said while down'),
        said('also while down'),
      ]);
      // Asked over REST after the channel's cursor, once: nothing answered before comes back.
      const reads = standIn.calls.filter((c) => c.method === 'GET' && c.path === '/channels/600/messages');
      expect(reads.length).toBeGreaterThanOrEqual(2);
      expect(dc.asked('after restart')).toBe(1);
      expect(dc.asked('said while down')).toBe(1);
    });

    it('REC-7 an approval pending at a SIGKILL is asked again after the restart; the old buttons are disabled and refused; approved, the command runs once', async () => {
      const { standIn } = dc;
      standIn.channel({ id: '610', type: 1 });
      if (dc.daemon === null) await dc.start();
      const doomed = path.join(scratch, store, 'doomed');
      const log = path.join(scratch, `${store}-approval.log`);
      fs.mkdirSync(doomed, { recursive: true });
      const command = `echo ran >> ${log}; rm -rf ${doomed}`;
      const approvalPosts = () =>
        standIn.calls.filter(
          (c) => c.method === 'POST' && c.path === '/channels/610/messages' && c.body.components,
        );
      standIn.say('610', KIM, `run: ${command}`);
      const shown = await dc.waitForPost('610', /^Approval needed: /);
      await waitForShownPrompt(dc.daemon!);
      await dc.kill();
      expect(fs.existsSync(doomed)).toBe(true);

      await dc.start();
      const again = await dc.waitForPost('610', /^Approval needed: /, 2);
      expect(again.body.content).toBe(shown.body.content);
      const first = parseApprovalClick(buttonsOf(shown)[0]!.custom_id)!.prompt;
      const second = parseApprovalClick(buttonsOf(again)[0]!.custom_id)!.prompt;
      expect(second).toEqual({
        prompt_id: first.prompt_id,
        execution_generation: first.execution_generation + 1,
      });
      expect(approvalPosts()).toHaveLength(2);
      expect(dc.posts('610')).toContain(resumedNotice('approval', false));
      // The old message is edited: its buttons disabled, its text saying it was replaced.
      const edited = await standIn.waitForCall(
        (c) =>
          c.method === 'PATCH' &&
          c.path.startsWith('/channels/610/messages/') &&
          /Replaced: the gateway restarted/.test(String(c.body.content)),
      );
      expect(String(edited.body.content)).toContain(String(shown.body.content));
      expect(buttonsOf(edited).every((b) => b.disabled)).toBe(true);
      // A click on the old button (a client that had not refreshed) answers nothing: stale.
      standIn.interact('610', KIM, { type: 3, custom_id: buttonsOf(shown)[0]!.custom_id });
      expect(String((await dc.waitForPost('610', /^That button belongs/)).body.content)).toBe(
        STALE_APPROVAL_ANSWER,
      );
      expect(runs(log)).toEqual([]);

      standIn.interact('610', KIM, { type: 3, custom_id: buttonsOf(again)[0]!.custom_id });
      await dc.waitForPost('610', /the tool `terminal` returned/);
      expect(runs(log)).toEqual(['ran']);
      expect(fs.existsSync(doomed)).toBe(false);
      expect(dc.posts('610').filter((p) => /the tool `terminal` returned/.test(p))).toHaveLength(1);
      expect(dc.asked(RESUME_NOTE)).toBe(0);
    });
  });
});
