/**
 * REC-4 and redelivery on Discord against the real daemon killed by SIGKILL. Discord replays
 * nothing to a fresh IDENTIFY, so what a restarted daemon answers comes from the turn it resumes
 * and from the REST catch-up after each channel's cursor; the inbound ledger keeps both to once.
 */
import { describe, expect, it } from 'vitest';
import { BACKENDS } from './gateway-harness.js';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import { RESUME_NOTE } from '../../src/surfaces/platforms/turn.js';
import { useDiscordDaemon } from './discord-fixture.js';

const KIM = { id: '401', username: 'kim' };
const said = (text: string) => `${DEMO_LABEL}: you said: ${text}`;
describe.each(BACKENDS)('Discord crash recovery on %s', (store) => {
  const dc = useDiscordDaemon({ store });

  function asked(text: string): number {
    return dc.model.requests.filter((r) => {
      const users = (r.body?.messages ?? []).filter((m) => m.role === 'user');
      return users.at(-1)?.content === text;
    }).length;
  }

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
      await standIn.waitForCall((c) => c.path === '/channels/600/messages' && c.method === 'POST', 2);
      expect(await dc.ask('600', KIM, 'after restart')).toBe(said('after restart'));
      const posts = dc.posts('600');
      // One answer for the interrupted turn (the resumed one), none for the catch-up's redelivery.
      expect(posts).toHaveLength(3);
      expect(posts[0]).toBe(said('before the crash'));
      expect(posts[2]).toBe(said('after restart'));
      expect(asked('mid-turn question')).toBe(1);
      expect(asked(RESUME_NOTE)).toBe(1);
      expect(asked('before the crash')).toBe(1);
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
      expect(asked('after restart')).toBe(1);
      expect(asked('said while down')).toBe(1);
    });
  });
});
