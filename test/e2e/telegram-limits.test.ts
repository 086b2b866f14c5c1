/**
 * `limits.turn_timeout_s` and `recovery.auto_continue_freshness_s` on chat-platform turns, through
 * the real daemon and the loopback Bot API stand-in: a turn held at the demo model past the limit is
 * stopped and its chat told once; a turn SIGKILLed mid-flight and restarted after its freshness
 * window is not continued, and its chat is told once that it was too old (the continued case, with
 * the default window, is in telegram-crash.test.ts); `recovery.max_resumes` applies to them as the
 * stuck-loop count (REC-5).
 */
import { describe, expect, it } from 'vitest';
import { STALE_NOTICE, suspendedNotice } from '../../src/domain/messaging/recovery.js';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import { RESUME_NOTE, TURN_TIMEOUT_NOTICE } from '../../src/domain/messaging/turn.js';
import { useTelegramDaemon } from './telegram-fixture.js';

const TIME_LIMIT = ['limits:', '  turn_timeout_s: 2'];
const tg = useTelegramDaemon({ yaml: TIME_LIMIT });

const dm = (id: number) => ({ id, type: 'private' as const });
const user = (id: number) => ({ id, first_name: `User${id}` });
const said = (text: string) => `${DEMO_LABEL}: you said: ${text}`;

describe('platform turns under limits.turn_timeout_s and recovery.auto_continue_freshness_s', () => {
  it('a turn held at the model past limits.turn_timeout_s is stopped and the chat is told once', async () => {
    await tg.start();
    const chat = dm(801);
    const { standIn, model } = tg;
    const seen = model.requests.length;
    model.hold();
    standIn.inject({ chat, from: user(801), text: 'slow question' });
    await model.waitForRequests(seen + 1);
    // Never answered by the model: only the time limit ends the turn.
    expect(await tg.waitForText(chat.id, /^Stopped/)).toBe(TURN_TIMEOUT_NOTICE);
    model.release();
    // The session goes on, and the stopped turn is not run again.
    expect(await tg.ask(chat, user(801), 'after the limit')).toBe(said('after the limit'));
    expect(tg.repliesTo(chat.id)).toEqual([TURN_TIMEOUT_NOTICE, said('after the limit')]);
    expect(tg.asked('slow question')).toBe(1);
    expect(tg.userMessages('after the limit')).toEqual(['slow question', 'after the limit']);
  });

  it('a turn SIGKILLed mid-flight and restarted past auto_continue_freshness_s is not continued; the chat is told once', async () => {
    const chat = dm(802);
    const { standIn, model } = tg;
    await tg.kill();
    tg.reconfigure(['recovery:', '  auto_continue_freshness_s: 1']);
    await tg.start();
    const resumesBefore = tg.asked(RESUME_NOTE);
    const seen = model.requests.length;
    model.hold();
    standIn.inject({ chat, from: user(802), text: 'interrupted long ago' });
    await model.waitForRequests(seen + 1);
    await tg.kill();
    await standIn.whenNoneHeld();
    model.release();
    // Past the window, counted in whole seconds from the turn's start.
    await new Promise((resolve) => setTimeout(resolve, 2500));

    await tg.start();
    expect(await tg.waitForText(chat.id, /too old to continue/)).toBe(STALE_NOTICE);
    expect(await tg.ask(chat, user(802), 'next message')).toBe(said('next message'));
    expect(tg.asked(RESUME_NOTE) - resumesBefore).toBe(0);
    expect(tg.asked('interrupted long ago')).toBe(1);
    // The conversation goes on: the interrupted message is in it, unanswered.
    expect(tg.userMessages('next message')).toEqual(['interrupted long ago', 'next message']);

    // Sent once: a further crash and restart neither repeats the notice nor continues the turn. (The
    // next turn on a chat starts only once the one before marked its reply delivered.)
    expect(await tg.ask(chat, user(802), 'barrier')).toBe(said('barrier'));
    await tg.kill();
    await tg.start();
    expect(await tg.ask(chat, user(802), 'after another restart')).toBe(said('after another restart'));
    // (The barrier's own reply may be sent again as recovered: the kill can come before it is marked.)
    const replies = tg.repliesTo(chat.id);
    expect(replies.filter((t) => t === STALE_NOTICE)).toHaveLength(1);
    expect(replies.slice(0, 2)).toEqual([STALE_NOTICE, said('next message')]);
    expect(replies.filter((t) => t.endsWith('next message'))).toHaveLength(1);
    expect(replies.at(-1)).toBe(said('after another restart'));
    expect(tg.asked(RESUME_NOTE) - resumesBefore).toBe(0);
  }, 120_000);

  it('a turn a graceful stop cut at its deadline is not continued after a restart past the window; the chat is told once', async () => {
    const chat = dm(803);
    const { standIn, model } = tg;
    await tg.kill();
    tg.reconfigure(['drain_timeout_s: 0', 'recovery:', '  auto_continue_freshness_s: 1']);
    await tg.start();
    const resumesBefore = tg.asked(RESUME_NOTE);
    const seen = model.requests.length;
    model.hold();
    standIn.inject({ chat, from: user(803), text: 'cut by the drain' });
    await model.waitForRequests(seen + 1);
    expect(await tg.stop()).toBe(0); // marks it resume_pending (shutdown_timeout) at once
    model.release();
    await new Promise((resolve) => setTimeout(resolve, 2500));

    await tg.start();
    expect(await tg.waitForText(chat.id, /too old to continue/)).toBe(STALE_NOTICE);
    expect(await tg.ask(chat, user(803), 'after the stop')).toBe(said('after the stop'));
    expect(await tg.stop()).toBe(0);
    await tg.start();
    expect(await tg.ask(chat, user(803), 'once more')).toBe(said('once more'));
    expect(tg.repliesTo(chat.id)).toEqual([STALE_NOTICE, said('after the stop'), said('once more')]);
    expect(tg.asked(RESUME_NOTE) - resumesBefore).toBe(0);
    expect(tg.userMessages('once more')).toEqual(['cut by the drain', 'after the stop', 'once more']);
  });

  it('recovery.max_resumes: 1 suspends a chat whose turn a SIGKILL cut, instead of continuing it; the chat is told once', async () => {
    const chat = dm(804);
    const { standIn, model } = tg;
    await tg.kill();
    tg.reconfigure(['recovery:', '  max_resumes: 1']);
    await tg.start();
    const resumesBefore = tg.asked(RESUME_NOTE);
    const seen = model.requests.length;
    model.hold();
    standIn.inject({ chat, from: user(804), text: 'cut once' });
    await model.waitForRequests(seen + 1);
    await tg.kill();
    await standIn.whenNoneHeld();
    model.release();

    await tg.start();
    expect(await tg.waitForText(chat.id, /interrupted by a restart/)).toBe(suspendedNotice(1));
    expect(await tg.ask(chat, user(804), 'a new start')).toBe(said('a new start'));
    // Not continued, and the next message starts a new conversation without the cut one.
    expect(tg.asked(RESUME_NOTE) - resumesBefore).toBe(0);
    expect(tg.asked('cut once')).toBe(1);
    expect(tg.userMessages('a new start')).toEqual(['a new start']);
    expect(tg.repliesTo(chat.id)).toEqual([suspendedNotice(1), said('a new start')]);
  });
});
