/**
 * REC-4 and redelivery on Slack against the real daemon killed by SIGKILL. Slack delivers an
 * envelope again (retry_attempt) until it is acknowledged, also to the next connection after a
 * crash; the adapter acknowledges only once the gateway took the event, and the inbound ledger
 * drops a redelivery of what was taken. So a crash on either side of the taking loses nothing and
 * doubles nothing.
 */
import { describe, expect, it } from 'vitest';
import { RESUME_NOTE, resumedNotice } from '../../src/domain/messaging/turn.js';
import { said, useSlackDaemon } from './slack-fixture.js';
import { BACKENDS } from './gateway-harness.js';

const KIM = { id: 'U0KIM', name: 'kim' };
const LEE = { id: 'U0LEE', name: 'lee' };
const MAX = { id: 'U0MAX', name: 'max' };

describe.each(BACKENDS)('Slack crash recovery on %s', (store) => {
  const sl = useSlackDaemon({ store });

  describe('Slack crash recovery through the real daemon', { timeout: 120_000 }, () => {
    it('a SIGKILL mid-turn: the turn is resumed once after restart and the chat gets exactly one reply', async () => {
      const { standIn, model } = sl;
      standIn.user(KIM);
      standIn.conversation({ id: 'D0KIM', kind: 'im' });
      await sl.start();
      expect(await sl.ask('D0KIM', KIM, 'before the crash')).toBe(said('before the crash'));
      const seen = model.requests.length;
      model.hold();
      standIn.say('D0KIM', KIM, 'mid-turn question');
      await model.waitForRequests(seen + 1);
      await sl.kill();
      model.release();
      await sl.start();
      await sl.waitForPost('D0KIM', /you said: mid-turn question$/);
      expect(await sl.ask('D0KIM', KIM, 'after restart')).toBe(said('after restart'));
      // Told it resumed, then one answer for the interrupted turn (its model call repeated on the
      // stored history, REC-7), none for a redelivery of its message.
      expect(sl.posts('D0KIM')).toEqual([
        said('before the crash'),
        resumedNotice('model', false),
        said('mid-turn question'),
        said('after restart'),
      ]);
      expect(sl.asked('mid-turn question')).toBe(2);
      expect(sl.asked(RESUME_NOTE)).toBe(0);
    });

    it('an envelope received but not taken when the daemon died is delivered again and answered once', async () => {
      const { standIn } = sl;
      standIn.user(LEE);
      standIn.conversation({ id: 'D0LEE', kind: 'im' });
      // The adapter is looking up who sent it when the process dies: received, not yet taken.
      standIn.holdLookups(LEE.id);
      const ts = standIn.say('D0LEE', LEE, 'caught between');
      await standIn.waitForHeldLookup(LEE.id);
      const [envelope] = standIn.envelopesOf(ts);
      expect(standIn.acks.some((a) => a.envelope_id === envelope)).toBe(false);
      await sl.kill();
      standIn.releaseLookups();
      await sl.start();
      await sl.waitForPost('D0LEE', /caught between/);
      await standIn.waitForAck(envelope!);
      const redelivered = standIn.deliveries.filter((d) => d.envelope_id === envelope);
      expect(redelivered.at(-1)!.retry_attempt).toBeGreaterThanOrEqual(1);
      expect(sl.posts('D0LEE')).toEqual([said('caught between')]);
      expect(sl.asked('caught between')).toBe(1);
    });

    it('an envelope taken whose acknowledgement was lost is delivered again after a crash and dropped', async () => {
      const { standIn } = sl;
      standIn.user(MAX);
      standIn.conversation({ id: 'D0MAX', kind: 'im' });
      standIn.loseAcks(1);
      const ts = standIn.say('D0MAX', MAX, 'acknowledged into the void');
      await sl.waitForPost('D0MAX', /into the void/);
      const [envelope] = standIn.envelopesOf(ts);
      // The next turn of the chat starts once the reply before it was marked delivered: killed
      // after that, that reply is not owed again (an owed reply is the ledger's case, not this one).
      expect(await sl.ask('D0MAX', MAX, 'settled first')).toBe(said('settled first'));
      await sl.kill();
      await sl.start();
      // Slack had no acknowledgement, so it delivers the envelope again; this time it is acknowledged.
      await standIn.waitForAck(envelope!);
      expect(standIn.deliveries.filter((d) => d.envelope_id === envelope).length).toBeGreaterThanOrEqual(2);
      expect(await sl.ask('D0MAX', MAX, 'next one')).toBe(said('next one'));
      expect(sl.posts('D0MAX').filter((t) => t.includes('into the void'))).toEqual([
        said('acknowledged into the void'),
      ]);
      expect(sl.posts('D0MAX').at(-1)).toBe(said('next one'));
      expect(sl.asked('acknowledged into the void')).toBe(1);
    });
  });
});
