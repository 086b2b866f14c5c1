/**
 * The inbound backlog: what waits in a chat's queue survives a restart, graceful (REC-6) or not,
 * and runs exactly once afterwards; what left the queue without a turn (a collapsed or stopped
 * follow-up) never runs when the platform hands it out again. Real SQLite file, the Telegram
 * stand-in, the demo model held at its barrier to keep a turn running.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { InboundRef } from '../../../src/domain/messaging/adapter.js';
import { ALICE, createHarness, dmWith, type Harness } from '../../fixtures/messaging-harness.js';

let h: Harness;

afterEach(async () => {
  await h?.dispose();
});

const send = (text: string) => h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text });
const refOf = (updateId: number): InboundRef => ({
  platform: 'telegram',
  chat_id: String(ALICE.id),
  message_id: h.standIn.messageId(updateId),
});
/** What the demo model echoed back, in order ("you said: X" → X). */
const answers = () =>
  h
    .textsTo(ALICE.id)
    .filter((t) => t.includes('you said: '))
    .map((t) => t.replace(/^.*you said: /s, ''));
const backlogRows = () =>
  h.store.db
    .prepare(`SELECT kind, json_extract(event, '$.text') AS text FROM inbound_backlog ORDER BY position`)
    .all();

/** A started gateway whose first turn is held at the model. */
async function startWithHeldTurn(): Promise<void> {
  h = await createHarness();
  h.build();
  await h.start();
  h.model.hold();
  send('held at the model');
  await h.model.waitForRequests(1);
}

/** A turn held at the model, then a follow-up and a /queue item waiting behind it. */
async function turnWithTwoWaiting(): Promise<{ followUp: number; queued: number }> {
  await startWithHeldTurn();
  const followUp = send('waiting follow-up');
  const queued = send('/queue waiting queued item');
  await h.waitForText(ALICE.id, /^Queued \(2 waiting\)\.$/);
  return { followUp, queued };
}

/** A later message of the chat runs after everything before it: once it is answered, all ran. */
async function barrier(label = 'barrier'): Promise<void> {
  send(`/queue ${label}`);
  await h.waitForText(ALICE.id, new RegExp(`you said: ${label}$`));
}

describe('REC-6 QUE-1 the inbound backlog', () => {
  it('a graceful stop keeps what waits; after the restart each waiting message is answered once, in order', async () => {
    const { followUp, queued } = await turnWithTwoWaiting();
    expect(backlogRows()).toEqual([
      { kind: 'message', text: 'waiting follow-up' },
      { kind: 'queued', text: 'waiting queued item' },
    ]);
    // The drain's deadline passes with the turn still at the model: it is interrupted and marked.
    await h.gateway.stop({ timeoutMs: 50 });
    const entry = (await h.store.listSessions()).entries[0]!;
    expect(entry).toMatchObject({ resume_pending: true, resume_reason: 'shutdown_timeout' });
    // Nothing waiting started during the drain; it is all still on the backlog (the follow-up,
    // promoted when the turn ended, is now owed its turn and can no longer be collapsed).
    expect(backlogRows()).toEqual([
      { kind: 'queued', text: 'waiting follow-up' },
      { kind: 'queued', text: 'waiting queued item' },
    ]);
    await h.store.close();

    // Telegram will not hand out the two again (the stop confirmed them): they run from the backlog.
    h.build();
    const requeued = h.gateway.events.next('recovery:done');
    await h.start();
    expect((await requeued).requeued).toBe(2);
    h.model.release();
    await barrier();
    expect(answers()).toEqual([
      expect.stringMatching(/Continue where you left off/),
      'waiting follow-up',
      'waiting queued item',
      'barrier',
    ]);
    expect(backlogRows()).toEqual([]);
    expect(await h.ledger.inboundOutcome(refOf(followUp))).toBe('turn');
    // Had Telegram handed them out again after all, they would not run a second time.
    h.standIn.redeliver(followUp);
    h.standIn.redeliver(queued);
    await barrier('second barrier');
    expect(answers().slice(1)).toEqual([
      'waiting follow-up',
      'waiting queued item',
      'barrier',
      'second barrier',
    ]);
    // The resumed request carried the interrupted message: the same conversation, continued.
    const resumed = h.model.requests.find((r) => JSON.stringify(r.body?.messages).includes('left off'));
    expect(JSON.stringify(resumed?.body?.messages)).toContain('held at the model');
  });

  it('a crash keeps what waits too, though Telegram never hands it out again', async () => {
    const { followUp, queued } = await turnWithTwoWaiting();
    await h.standIn.waitForConfirmed(queued);
    expect(await h.ledger.inboundOutcome(refOf(followUp))).toBe('waiting');
    await h.crash();
    h.build();
    await h.start();
    h.model.release();
    await barrier();
    // REC-7: the turn cut at its model call is called again on its stored history (no restart note).
    expect(answers()).toEqual(['held at the model', 'waiting follow-up', 'waiting queued item', 'barrier']);
  });

  it('a follow-up replaced by a newer one is recorded collapsed and never runs when redelivered', async () => {
    await startWithHeldTurn();
    const older = send('older follow-up');
    const newer = send('newer follow-up');
    // The status command is admitted after both: by its answer, the collapse was recorded.
    send('/status');
    await h.waitForText(ALICE.id, /^Session .* 1 waiting\.$/);
    expect(await h.ledger.inboundOutcome(refOf(older))).toBe('collapsed');
    expect(await h.ledger.inboundOutcome(refOf(newer))).toBe('waiting');

    await h.crash();
    h.standIn.redeliver(older);
    h.build();
    const duplicate = h.gateway.events.next('inbound:duplicate');
    await h.start();
    expect(await duplicate).toEqual(refOf(older));
    h.model.release();
    await barrier();
    expect(answers()).toEqual(['held at the model', 'newer follow-up', 'barrier']);
  });

  it('/stop drops the waiting follow-up for good; the /queue item stays and runs once', async () => {
    const { followUp } = await turnWithTwoWaiting();
    send('/stop');
    await h.waitForText(ALICE.id, /^Stopped\.$/);
    expect(await h.ledger.inboundOutcome(refOf(followUp))).toBe('dropped');
    // The follow-up's row is gone; the /queue item's row went with the start of its turn.
    expect(backlogRows()).not.toContainEqual(expect.objectContaining({ text: 'waiting follow-up' }));
    h.model.release();
    await barrier();
    await h.crash();
    h.standIn.redeliver(followUp);
    h.build();
    await h.start();
    await barrier('after the restart');
    expect(answers()).toEqual(['waiting queued item', 'barrier', 'after the restart']);
  });
});
