/**
 * REC-4..6 against the real daemon killed by SIGKILL: `gatehouse serve` as a child process, the
 * loopback Bot API stand-in (which can hold a sendMessage unanswered, so a reply can be on the
 * ledger but not yet in the chat when the daemon dies) and the demo model in this process (held, so
 * a turn is running when the daemon dies). Assertions are on what reached the chat (the stand-in's
 * answered sendMessage calls) and on what the model was asked. The crash cases seeded straight into
 * the database are in test/unit/messaging/recovery.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { recoveredReplyText, SUSPENDED_NOTICE } from '../../src/domain/messaging/recovery.js';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import { RESUME_NOTE, resumedNotice } from '../../src/domain/messaging/turn.js';
import { exited, spawnCli } from './cli.js';
import { BACKENDS } from './gateway-harness.js';
import { useTelegramDaemon } from './telegram-fixture.js';

describe.each(BACKENDS)('Telegram crash recovery on %s', { timeout: 120_000 }, (store) => {
  const tg = useTelegramDaemon({ store });

  const dm = (id: number) => ({ id, type: 'private' as const });
  const user = (id: number) => ({ id, first_name: `User${id}` });
  const said = (text: string) => `${DEMO_LABEL}: you said: ${text}`;
  const toChat = (chatId: number) => (payload: Record<string, unknown>) => payload.chat_id === chatId;

  /** Kills the daemon, then waits until every send it left held at the stand-in is dropped. */
  async function crash(): Promise<void> {
    await tg.kill();
    await tg.standIn.whenNoneHeld();
  }

  async function running(): Promise<void> {
    if (tg.daemon === null) await tg.start();
  }

  describe('REC-4 crash recovery through the real daemon, killed by SIGKILL', () => {
    it('a reply recorded but not sent when the daemon died is sent once after restart, as recovered, not regenerated', async () => {
      await running();
      const chat = dm(701);
      const { standIn } = tg;
      standIn.holdSends(toChat(chat.id));
      standIn.inject({ chat, from: user(701), text: 'owed reply' });
      // The turn recorded its reply on the ledger before it sent it: the send is under way.
      await standIn.waitForHeld((c) => c.payload.chat_id === chat.id);
      await crash();
      standIn.releaseSends();
      expect(tg.repliesTo(chat.id)).toEqual([]);

      await tg.start();
      await tg.waitForText(chat.id, /Recovered reply/);
      expect(await tg.ask(chat, user(701), 'after recovery')).toBe(said('after recovery'));
      expect(tg.repliesTo(chat.id)).toEqual([recoveredReplyText(said('owed reply')), said('after recovery')]);
      // The reply came from the ledger: the model answered the message once, and nothing was resumed.
      expect(tg.asked('owed reply')).toBe(1);
      expect(tg.requestTexts('after recovery')).not.toContain('Continue where you left off');
      expect(tg.userMessages('after recovery')).toEqual(['owed reply', 'after recovery']);
    });

    it('a delivered reply is never sent again after a SIGKILL and restart', async () => {
      await running();
      const chat = dm(702);
      expect(await tg.ask(chat, user(702), 'delivered once')).toBe(said('delivered once'));
      // The next turn on the chat starts only after the one before marked its reply delivered.
      expect(await tg.ask(chat, user(702), 'and again')).toBe(said('and again'));
      await crash();
      await tg.start();
      expect(await tg.ask(chat, user(702), 'after the crash')).toBe(said('after the crash'));
      const replies = tg.repliesTo(chat.id);
      expect(replies.filter((t) => t.includes('delivered once'))).toEqual([said('delivered once')]);
      expect(replies[replies.length - 1]).toBe(said('after the crash'));
      expect(tg.asked('delivered once')).toBe(1);
    });

    it('REC-5 a turn running at three SIGKILLs in a row suspends the session: the next message starts fresh', async () => {
      await running();
      const chat = dm(703);
      const { standIn, model } = tg;
      const resumesBefore = tg.asked(RESUME_NOTE);
      const seen = model.requests.length;
      model.hold();
      standIn.inject({ chat, from: user(703), text: 'stuck question' });
      await model.waitForRequests(seen + 1);
      await crash(); // 1st: the turn is resumed at the next start…
      for (let restart = 1; restart <= 2; restart++) {
        await tg.start();
        await model.waitForRequests(seen + 1 + restart); // …and is running again when killed
        await crash(); // 2nd, 3rd
      }
      // REC-7: resumed at its model call, on the stored history: the question asked again, no note.
      expect(tg.asked('stuck question')).toBe(3);
      expect(tg.asked(RESUME_NOTE) - resumesBefore).toBe(0);
      const resumed = resumedNotice('model', false);
      expect(tg.repliesTo(chat.id)).toEqual([resumed, resumed]);

      await tg.start();
      model.release();
      expect(await tg.ask(chat, user(703), 'after the loop')).toBe(said('after the loop'));
      // Not resumed a third time (a resumed turn would have run before this message, on the same
      // chat), and the new message starts a new session without the stuck conversation.
      expect(tg.asked('stuck question')).toBe(3);
      expect(tg.userMessages('after the loop')).toEqual(['after the loop']);
      // What the chat is told: that its turn resumed, twice; once, that the stuck conversation was
      // closed; then the answer to its new message. The stuck question itself is never answered.
      expect(tg.repliesTo(chat.id)).toEqual([resumed, resumed, SUSPENDED_NOTICE, said('after the loop')]);
    });

    it('a SIGKILL and a restart under another TZ loses no reply and sends none twice', async () => {
      const { standIn, model } = tg;
      await tg.kill();
      await tg.start({ TZ: 'Pacific/Kiritimati' }); // UTC+14
      const midTurn = dm(704);
      const owed = dm(705);
      expect(await tg.ask(midTurn, user(704), 'tz before')).toBe(said('tz before'));
      expect(await tg.ask(owed, user(705), 'tz owed before')).toBe(said('tz owed before'));
      // 705: the reply is on the ledger, unsent; 704: the turn is at the model.
      standIn.holdSends(toChat(owed.id));
      standIn.inject({ chat: owed, from: user(705), text: 'tz owed' });
      await standIn.waitForHeld((c) => c.payload.chat_id === owed.id);
      const seen = model.requests.length;
      model.hold();
      standIn.inject({ chat: midTurn, from: user(704), text: 'tz crash' });
      await model.waitForRequests(seen + 1);
      await crash();
      standIn.releaseSends();

      await tg.start({ TZ: 'America/Adak' }); // UTC-10: local clocks read a day earlier
      model.release();
      await tg.waitForText(midTurn.id, /you said: tz crash$/);
      await tg.waitForText(owed.id, /Recovered reply/);
      expect(await tg.ask(midTurn, user(704), 'tz after')).toBe(said('tz after'));
      expect(await tg.ask(owed, user(705), 'tz owed after')).toBe(said('tz owed after'));
      expect(tg.repliesTo(midTurn.id)).toEqual([
        said('tz before'),
        resumedNotice('model', false),
        said('tz crash'),
        said('tz after'),
      ]);
      expect(tg.repliesTo(owed.id)).toEqual([
        said('tz owed before'),
        recoveredReplyText(said('tz owed')),
        said('tz owed after'),
      ]);
      // The interrupted turn went on in its own conversation (its model call repeated on the stored
      // history, no restart note); the owed one was not asked again.
      expect(tg.userMessages('tz after')).toEqual(['tz before', 'tz crash', 'tz after']);
      expect(tg.asked('tz crash')).toBe(2);
      expect(tg.asked(RESUME_NOTE)).toBe(0);
      expect(tg.asked('tz owed')).toBe(1);
    });

    it('REC-6 messages that arrive while start-up recovery runs wait, then are answered in order, once each', async () => {
      await running();
      const { standIn, model } = tg;
      const owed = dm(706);
      const resumed = dm(707);
      const newcomer = dm(708);
      standIn.holdSends(toChat(owed.id));
      standIn.inject({ chat: owed, from: user(706), text: 'owed at restart' });
      await standIn.waitForHeld((c) => c.payload.chat_id === owed.id);
      const seen = model.requests.length;
      model.hold();
      standIn.inject({ chat: resumed, from: user(707), text: 'cut at restart' });
      await model.waitForRequests(seen + 1);
      await crash();

      // The restart's recovery sends the owed reply first; held, it keeps recovery running.
      const starting = tg.start();
      await standIn.waitForHeld((c) => c.payload.chat_id === owed.id, 2);
      standIn.inject({ chat: resumed, from: user(707), text: 'during recovery one' });
      standIn.inject({ chat: resumed, from: user(707), text: '/queue during recovery two' });
      standIn.inject({ chat: owed, from: user(706), text: 'during recovery three' });
      const last = standIn.inject({ chat: newcomer, from: user(708), text: 'during recovery four' });
      await standIn.waitForConfirmed(last); // the daemon has them all
      const during = ['one', 'two', 'three', 'four'].map((n) => `during recovery ${n}`);
      expect(during.map((text) => tg.asked(text))).toEqual([0, 0, 0, 0]);

      standIn.releaseSends();
      await starting;
      // Admitted now, in order: the follow-up and the /queue item wait behind the resumed turn.
      expect(await tg.waitForText(resumed.id, /^Queued/)).toBe('Queued (2 waiting).');
      model.release();
      await tg.waitForText(resumed.id, /during recovery two$/);
      await tg.waitForText(owed.id, /during recovery three$/);
      await tg.waitForText(newcomer.id, /during recovery four$/);
      // Behind the recovered work, in arrival order, each once.
      expect(tg.repliesTo(owed.id)).toEqual([
        recoveredReplyText(said('owed at restart')),
        said('during recovery three'),
      ]);
      // The resumed turn's notice is sent as it starts, which may be before or after the queue's
      // answer; the answers come in order behind it.
      const notice = resumedNotice('model', false);
      expect(tg.repliesTo(resumed.id).filter((t) => t !== notice)).toEqual([
        'Queued (2 waiting).',
        said('cut at restart'),
        said('during recovery one'),
        said('during recovery two'),
      ]);
      expect(tg.repliesTo(resumed.id).filter((t) => t === notice)).toHaveLength(1);
      expect(tg.repliesTo(resumed.id).indexOf(notice)).toBeLessThan(
        tg.repliesTo(resumed.id).indexOf(said('cut at restart')),
      );
      expect(tg.repliesTo(newcomer.id)).toEqual([said('during recovery four')]);
      expect(during.map((text) => tg.asked(text))).toEqual([1, 1, 1, 1]);
      expect(tg.asked('owed at restart')).toBe(1);
    });

    // The update is confirmed (the next getUpdates offset) only once the gateway took it: during
    // start-up recovery that is its parked row on the backlog, which the next start admits.
    it('REC-6 a message that arrived during start-up recovery survives a SIGKILL before recovery ends', async () => {
      await running();
      const { standIn } = tg;
      const owed = dm(709);
      const waiting = dm(710);
      standIn.holdSends(toChat(owed.id));
      standIn.inject({ chat: owed, from: user(709), text: 'owed twice over' });
      await standIn.waitForHeld((c) => c.payload.chat_id === owed.id);
      await crash();
      // Started by hand: the fixture's start() resolves only once recovery is over.
      const child = spawnCli(tg.home, ['serve'], tg.serveEnv());
      child.stdin!.end();
      try {
        await standIn.waitForHeld((c) => c.payload.chat_id === owed.id, 2); // recovery is sending it
        const update = standIn.inject({ chat: waiting, from: user(710), text: 'arrived mid-recovery' });
        await standIn.waitForConfirmed(update);
      } finally {
        child.kill('SIGKILL');
        await exited(child);
        await standIn.whenNoneHeld();
        standIn.releaseSends();
      }
      await tg.start();
      await tg.waitForText(owed.id, /Recovered reply/);
      // The same chat's next message runs after anything the chat had waiting.
      standIn.inject({ chat: waiting, from: user(710), text: '/queue barrier' });
      await tg.waitForText(waiting.id, /you said: barrier$/);
      expect(tg.repliesTo(waiting.id).filter((t) => t.endsWith('arrived mid-recovery'))).toHaveLength(1);
    });
  });
});
