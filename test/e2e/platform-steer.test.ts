/**
 * `platforms.<name>.during_turn: steer` (issue 28, docs/scheduling.md "Steering a running turn"):
 * a chat message sent while a turn runs steers that turn. Through the real daemon and the Telegram
 * stand-in, on SQLite and PostgreSQL: a steer applied at the turn's next step boundary (stored as a
 * user message of the turn, seen by its next model call, no turn of its own); one that came after
 * the turn's last model call run as the next turn, the chat told so; one admitted before a SIGKILL
 * applied once by the resumed turn.
 *
 * "Taken" is observed through the chat itself: commands share the admission chain with messages,
 * so once `/status` answers, the steer sent before it is durable on the backlog.
 */
import { describe, expect, it } from 'vitest';
import { BACKENDS } from './gateway-harness.js';
import { useTelegramDaemon } from './telegram-fixture.js';

const said = (text: string) => new RegExp(`you said: ${text}$`);

describe.each(BACKENDS)('during_turn: steer on Telegram on %s', (store) => {
  const tg = useTelegramDaemon({ store, telegramYaml: ['    during_turn: steer'] });

  /** Sends `first`, holds its first model call, sends `steer` meanwhile and waits until it was taken. */
  async function steerDuring(chat: { id: number; type: 'private' }, first: string, steer: string) {
    const user = { id: chat.id, first_name: 'Sam' };
    const seen = tg.model.requests.length;
    tg.model.hold();
    tg.standIn.inject({ chat, from: user, text: first });
    await tg.model.waitForRequests(seen + 1);
    tg.standIn.inject({ chat, from: user, text: steer });
    expect(await tg.ask(chat, user, '/status')).toMatch(/: working, 1 waiting\.$/);
  }

  it("is applied at the running turn's next step boundary: one turn, its next model call sees it", async () => {
    await tg.start();
    const chat = { id: 8100, type: 'private' as const };
    await steerDuring(chat, 'run: echo steer-base', 'actually use staging');
    tg.model.release();
    await tg.waitForText(chat.id, said('actually use staging'));
    // The call after the tool result carried the steer as the turn's newest user message.
    expect(tg.userMessages('actually use staging')).toEqual(['run: echo steer-base', 'actually use staging']);
    const request = JSON.parse(tg.requestTexts('actually use staging')) as { role: string }[];
    expect(request.slice(-2).map((m) => m.role)).toEqual(['tool', 'user']);
    expect(tg.asked('actually use staging')).toBe(1);
    // No turn of its own, no notice: the chat got the status line and the turn's one answer.
    expect(await tg.ask(chat, { id: chat.id, first_name: 'Sam' }, 'next')).toMatch(said('next'));
    expect(tg.repliesTo(chat.id).filter((t) => /staging|last step/.test(t))).toEqual([
      expect.stringMatching(said('actually use staging')),
    ]);
  });

  it("that comes after the turn's last model call runs as the next turn, and the chat is told", async () => {
    const chat = { id: 8200, type: 'private' as const };
    await steerDuring(chat, 'hello late', 'late steer');
    tg.model.release();
    await tg.waitForText(chat.id, said('hello late'));
    expect(await tg.waitForText(chat.id, /last step/)).toBe(
      'Your message came after this turn had made its last step, so it is answered as the next turn.',
    );
    await tg.waitForText(chat.id, said('late steer'));
    expect(tg.asked('late steer')).toBe(1);
    expect(tg.userMessages('late steer')).toEqual(['hello late', 'late steer']);
  });

  it('admitted before a SIGKILL is applied once by the resumed turn', async () => {
    const chat = { id: 8300, type: 'private' as const };
    await steerDuring(chat, 'run: echo crash-base', 'steer across crash');
    await tg.kill();
    tg.model.release();
    await tg.start();
    await tg.waitForText(chat.id, said('steer across crash'));
    expect(tg.asked('steer across crash')).toBe(1);
    expect(tg.userMessages('steer across crash')).toEqual(['run: echo crash-base', 'steer across crash']);
    // A clean restart applies nothing again and answers nothing again.
    expect(await tg.stop()).toBe(0);
    await tg.start();
    expect(await tg.ask(chat, { id: chat.id, first_name: 'Sam' }, 'after restarts')).toMatch(
      said('after restarts'),
    );
    expect(tg.userMessages('after restarts')).toEqual([
      'run: echo crash-base',
      'steer across crash',
      'after restarts',
    ]);
    expect(tg.repliesTo(chat.id).filter((t) => said('steer across crash').test(t))).toHaveLength(1);
    expect(await tg.stop()).toBe(0);
  });
});
