/**
 * A graceful stop (SIGTERM) of the real daemon while a chat has a turn held at the model and two
 * more messages waiting behind it (REC-6, QUE-1): nothing the chat was told is lost. The drain
 * deadline is short (`drain_timeout_s: 1`), so the held turn is interrupted and marked
 * resume_pending; the waiting messages stay on the inbound backlog. After the restart the turn is
 * continued once and each waiting message is answered exactly once, in order.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import { useTelegramDaemon } from './telegram-fixture.js';

const tg = useTelegramDaemon({ yaml: ['drain_timeout_s: 1'] });

const CHAT = { id: 901, type: 'private' as const };
const NOOR = { id: 901, first_name: 'Noor' };

describe('REC-6 a graceful stop loses nothing that waited', () => {
  it('answers each waiting message once after a SIGTERM restart, and continues the interrupted turn once', async () => {
    const { model, standIn } = tg;
    await tg.start();
    const seen = model.requests.length;
    model.hold();
    standIn.inject({ chat: CHAT, from: NOOR, text: 'held at the model' });
    await model.waitForRequests(seen + 1);
    const followUp = standIn.inject({ chat: CHAT, from: NOOR, text: 'waiting follow-up' });
    const queued = standIn.inject({ chat: CHAT, from: NOOR, text: '/queue waiting queued item' });
    expect(await tg.waitForText(CHAT.id, /^Queued/)).toBe('Queued (2 waiting).');

    expect(await tg.stop()).toBe(0);
    expect(tg.repliesTo(CHAT.id)).toEqual(['Queued (2 waiting).']);
    // The interrupted turn is marked for resumption by the drain (REC-6).
    const db = new Database(homeLayout(tg.home).stateDb('default'), { readonly: true });
    const route = db
      .prepare('SELECT resume_pending, resume_reason FROM routes WHERE session_key = ?')
      .get(`agent:main:telegram:dm:${CHAT.id}`);
    const waiting = db
      .prepare(`SELECT json_extract(event, '$.text') FROM inbound_backlog ORDER BY position`)
      .pluck()
      .all();
    db.close();
    expect(route).toEqual({ resume_pending: 1, resume_reason: 'shutdown_timeout' });
    expect(waiting).toEqual(['waiting follow-up', 'waiting queued item']);

    // The stop confirmed both updates: Telegram will not hand them out again. They run from the backlog.
    await tg.start();
    model.release();
    // A /queue item runs after everything before it on the chat: once it is answered, all ran.
    const barrier = async (label: string) => {
      standIn.inject({ chat: CHAT, from: NOOR, text: `/queue ${label}` });
      await tg.waitForText(CHAT.id, new RegExp(`you said: ${label}$`));
    };
    await barrier('barrier');
    const answers = () =>
      tg
        .repliesTo(CHAT.id)
        .filter((t) => t.includes('you said: '))
        .map((t) => t.replace(/^.*you said: /s, ''));
    expect(answers()).toEqual([
      expect.stringMatching(/Continue where you left off/),
      'waiting follow-up',
      'waiting queued item',
      'barrier',
    ]);
    // The continued turn is the interrupted conversation: its request carried the held message.
    expect(tg.requestTexts('Continue where you left off')).toContain('held at the model');

    // Were Telegram to hand the two out again after all, they would not run a second time.
    standIn.redeliver(followUp);
    standIn.redeliver(queued);
    await barrier('second barrier');
    expect(answers().slice(1)).toEqual([
      'waiting follow-up',
      'waiting queued item',
      'barrier',
      'second barrier',
    ]);

    // Another graceful restart owes the chat nothing: only the new message is answered.
    expect(await tg.stop()).toBe(0);
    await tg.start();
    expect(await tg.ask(CHAT, NOOR, 'after two restarts')).toMatch(/you said: after two restarts$/);
    expect(answers()).toHaveLength(6);
  });
});
