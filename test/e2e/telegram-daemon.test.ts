/**
 * The Telegram adapter inside the real daemon (`gatehouse serve` as a child process): the Bot API
 * is the loopback stand-in, the model is the demo model over HTTP in this process, and the crash is
 * a real SIGKILL of the daemon mid-turn. Group members have sessions of their own here (the
 * default); telegram-shared.test.ts runs a daemon with shared group sessions.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { resumedNotice } from '../../src/domain/messaging/turn.js';
import { BACKENDS } from './gateway-harness.js';
import { useTelegramDaemon } from './telegram-fixture.js';

describe.each(BACKENDS)('Telegram daemon on %s', (store) => {
  const tg = useTelegramDaemon({ store });

  const DM = { id: 555, type: 'private' as const };
  const KIM = { id: 555, first_name: 'Kim' };
  const GROUP = { id: -100777, type: 'supergroup' as const, title: 'Team' };
  const ANN = { id: 11, first_name: 'Ann' };
  const BOB = { id: 22, first_name: 'Bob' };

  describe('UX-1 SRC-1 Telegram through the real daemon', () => {
    it('answers a DM exactly once and reports the adapter in gatehouse status', async () => {
      await tg.start();
      expect(await tg.ask(DM, KIM, 'hello gatehouse')).toMatch(/you said: hello gatehouse/);
      // A later message on the same chat is answered after the first: had the first been sent twice,
      // the duplicate would be in the list by now.
      expect(await tg.ask(DM, KIM, 'second message')).toMatch(/you said: second message/);
      expect(tg.repliesTo(DM.id).filter((t) => t.includes('hello gatehouse'))).toHaveLength(1);

      const json = await runCli(tg.home, ['status', '--json']);
      expect(json.code).toBe(0);
      const report = JSON.parse(json.stdout) as { adapters: unknown[]; store: string };
      // The daemon really runs on the backend this block is for (as the daemon says, not the config).
      expect(report.store).toMatch(store === 'postgres' ? /^postgres \(schema gh_test_/ : /^sqlite \(/);
      expect(report.adapters).toEqual([
        { platform: 'telegram', state: 'running', detail: null, account: '@gatehouse_bot', mode: 'polling' },
      ]);
      const text = await runCli(tg.home, ['status']);
      expect(text.stdout).toContain('telegram: polling as @gatehouse_bot');
    });

    it('KEY-1 gives each user of a group a session of their own', async () => {
      expect(await tg.ask(GROUP, ANN, 'alpha-secret from ann')).toMatch(/alpha-secret/);
      expect(await tg.ask(GROUP, BOB, 'beta from bob')).toMatch(/beta from bob/);
      // Bob's turn did not see Ann's message; Ann's next turn still does (her session continued).
      expect(tg.requestTexts('beta from bob')).not.toContain('alpha-secret');
      expect(await tg.ask(GROUP, ANN, 'gamma from ann')).toMatch(/gamma from ann/);
      expect(tg.requestTexts('gamma from ann')).toContain('alpha-secret');
    });

    it('KEY-1 KEY-3 a forum topic is one session shared by its members, apart from the main chat', async () => {
      const forum = { ...GROUP, id: -100888, is_forum: true };
      expect(await tg.ask(forum, ANN, 'main-chat words', undefined)).toMatch(/main-chat words/);
      expect(await tg.ask(forum, ANN, 'topic from ann', 7)).toMatch(/you said: topic from ann/);
      expect(await tg.ask(forum, BOB, 'topic from bob', 7)).toMatch(/you said: topic from bob/);
      // Replies stay in their topic; the main chat got only its own.
      expect(tg.repliesTo(forum.id, 7)).toHaveLength(2);
      expect(tg.repliesTo(forum.id, null)).toHaveLength(1);
      // Bob's turn saw Ann's topic message, each prefixed with its speaker, and not the main chat.
      expect(tg.userMessages('topic from bob')).toEqual(['[Ann] topic from ann', '[Bob] topic from bob']);
      // KEY-3: the system prompt names no speaker, so it is the same for both turns.
      const system = (marker: string) => (JSON.parse(tg.requestTexts(marker)) as { content: string }[])[0]!;
      expect(system('topic from bob').content).toBe(system('topic from ann').content);
      expect(system('topic from bob').content).not.toMatch(/\bAnn\b|\bBob\b/);
      // Another topic is another session; Ann's main-chat session is still her own.
      expect(await tg.ask(forum, BOB, 'topic eight', 8)).toMatch(/topic eight/);
      expect(tg.userMessages('topic eight')).toEqual(['[Bob] topic eight']);
      expect(await tg.ask(forum, ANN, 'main again', undefined)).toMatch(/main again/);
      expect(tg.userMessages('main again')).toEqual(['main-chat words', 'main again']);
    });

    it('QUE-2 /new starts a fresh conversation for the chat', async () => {
      expect(await tg.ask(DM, KIM, '/new')).toBe('Started a new conversation.');
      expect(await tg.ask(DM, KIM, 'fresh start')).toMatch(/you said: fresh start/);
      expect(tg.requestTexts('fresh start')).not.toContain('hello gatehouse');
    });

    it('issue 12 item 10: only a bare command or one addressed to this bot (getMe) is a command', async () => {
      const { model, standIn } = tg;
      const status = await tg.ask(GROUP, ANN, '/status');
      const session = /^Session (\S+):/.exec(status)![1]!;
      const asked = model.requests.length;
      // In a group a command for another bot is ignored: no reset, no answer, no turn; still confirmed.
      const foreign = standIn.inject({ chat: GROUP, from: ANN, text: '/new@SomeOtherBot' });
      expect(await tg.ask(GROUP, ANN, '/status@gatehouse_bot')).toBe(status);
      await standIn.waitForConfirmed(foreign);
      expect(tg.repliesTo(GROUP.id)).not.toContain('Started a new conversation.');
      expect(model.requests.length).toBe(asked);
      // Addressed to this bot (any letter case), it is the command.
      expect(await tg.ask(GROUP, ANN, '/new@Gatehouse_Bot')).toBe('Started a new conversation.');
      expect(await tg.ask(GROUP, ANN, '/status')).not.toContain(session);
      // In a private chat only this bot listens: another bot's command is an ordinary message.
      expect(await tg.ask(DM, KIM, '/reset@SomeOtherBot')).toMatch(/you said: \/reset@SomeOtherBot/);
    });

    it('REC-4 resumes a turn cut by SIGKILL once after restart: one reply reaches the chat', async () => {
      const chat = { id: 556, type: 'private' as const };
      const user = { id: 556, first_name: 'Lee' };
      const { model, standIn } = tg;
      const seen = model.requests.length;
      model.hold();
      const update = standIn.inject({ chat, from: user, text: 'before the crash' });
      await model.waitForRequests(seen + 1);
      await standIn.waitForConfirmed(update); // Telegram will not hand it out again
      await tg.kill();
      expect(tg.repliesTo(chat.id)).toEqual([]);

      await tg.start();
      model.release();
      await tg.waitForText(chat.id, /you said: before the crash$/);
      // REC-7: told it resumed, then one reply: the model was called again on the stored history.
      expect(tg.repliesTo(chat.id)).toEqual([
        resumedNotice('model', false),
        expect.stringMatching(/you said: before the crash$/),
      ]);
      expect(tg.requestTexts('before the crash')).not.toContain('Continue where you left off');

      // A graceful stop and another start send nothing again.
      expect(await tg.stop()).toBe(0);
      await tg.start();
      expect(await tg.ask(chat, user, 'after restarts')).toMatch(/after restarts/);
      expect(tg.repliesTo(chat.id)).toHaveLength(3);
    });

    it('REC-4 a message Telegram hands out again after a SIGKILL never starts a second turn', async () => {
      const { model, standIn } = tg;
      const user = (id: number) => ({ id, first_name: `User${id}` });
      const dm = (id: number) => ({ id, type: 'private' as const });
      const answers = (id: number) =>
        tg
          .repliesTo(id)
          .filter((t) => t.includes('you said: '))
          .map((t) => t.replace(/^.*you said: /s, ''));
      // Chat 601: its turn was running. 602: answered before the crash. 603: a turn running and a
      // follow-up waiting behind it, never started.
      const answered = standIn.inject({ chat: dm(602), from: user(602), text: 'answered before' });
      await tg.waitForText(602, /you said: answered before$/);
      const seen = model.requests.length;
      model.hold();
      const running = standIn.inject({ chat: dm(601), from: user(601), text: 'running at the crash' });
      const running3 = standIn.inject({ chat: dm(603), from: user(603), text: 'also running' });
      await model.waitForRequests(seen + 2);
      const waiting = standIn.inject({ chat: dm(603), from: user(603), text: 'waiting behind' });
      await standIn.waitForConfirmed(waiting);
      await tg.kill();

      // As if Telegram never heard these were confirmed: all four come again, in order.
      for (const id of [answered, running, running3, waiting]) standIn.redeliver(id);
      await tg.start();
      model.release();

      // A /queue item runs after everything before it on the chat, so once it is answered, any
      // turn the redelivery had started would have answered too.
      for (const id of [601, 602, 603]) {
        standIn.inject({ chat: dm(id), from: user(id), text: `/queue barrier ${id}` });
        await tg.waitForText(id, new RegExp(`you said: barrier ${id}$`));
      }
      // The turns running at the crash resumed at their model call (REC-7): each answered once.
      expect(answers(601)).toEqual(['running at the crash', 'barrier 601']);
      expect(answers(602)).toEqual(['answered before', 'barrier 602']);
      // The follow-up waited on the backlog: it is answered once, from there, and its redelivery dropped.
      expect(answers(603)).toEqual(['also running', 'waiting behind', 'barrier 603']);
    });

    it('issue 16: a command update Telegram hands out again after a SIGKILL is carried out once', async () => {
      const { standIn } = tg;
      const chat = { id: 604, type: 'private' as const };
      const user = { id: 604, first_name: 'Rae' };
      if (tg.daemon === null) await tg.start();
      const say = async (text: string, reply: RegExp, n = 1) => {
        const update = standIn.inject({ chat, from: user, text });
        await tg.waitForText(chat.id, reply, n);
        await standIn.waitForConfirmed(update);
        return update;
      };
      await say('old words', /you said: old words$/);
      const reset = await say('/new', /^Started a new conversation\.$/);
      const kept = await say('kept words', /you said: kept words$/);
      // A turn starts only after the one before it marked its reply delivered.
      await say('last words', /you said: last words$/);
      await tg.kill();

      // As if the polls confirming them never reached Telegram: the /new and the message come again.
      standIn.redeliver(reset);
      standIn.redeliver(kept);
      await tg.start();
      await say('/queue after restart', /you said: after restart$/);
      // The /new was recognised as taken (by its message, which its update carries) and not redone:
      // one answer to it, and the conversation after it still holds the message that followed it.
      expect(tg.repliesTo(chat.id).filter((t) => t === 'Started a new conversation.')).toHaveLength(1);
      expect(tg.userMessages('after restart')).toEqual(['kept words', 'last words', 'after restart']);
      expect(tg.repliesTo(chat.id).filter((t) => t.includes('you said: kept words'))).toHaveLength(1);
    });
  });
});
