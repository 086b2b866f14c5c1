/**
 * The Telegram adapter confirms an update (the offset of its next getUpdates) only once the gateway
 * has taken every update handed to it, while still handing a batch in without waiting between them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { NotConfirmable, type MessageEvent } from '../../../src/domain/messaging/adapter.js';
import { TelegramAdapter } from '../../../src/surfaces/platforms/telegram/adapter.js';
import { ALICE, BOB, dmWith } from '../../fixtures/messaging-harness.js';
import { startTelegramStandIn, type TelegramStandIn } from '../../fixtures/telegram-standin.js';

let standIn: TelegramStandIn | undefined;
let adapter: TelegramAdapter | undefined;
afterEach(async () => {
  await adapter?.stop();
  await standIn?.close();
});

/** Settles false when `promise` has not settled within `ms`. */
const within = (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe('Telegram updates are confirmed only once taken', () => {
  it('hands a batch in at once and confirms it after the last update was taken', async () => {
    standIn = await startTelegramStandIn();
    adapter = new TelegramAdapter({ token: standIn.token, apiRoot: standIn.apiRoot, pollTimeoutSeconds: 1 });
    const handedIn: { event: MessageEvent; take: () => void }[] = [];
    let arrived: () => void = () => undefined;
    const bothArrived = new Promise<void>((resolve) => (arrived = resolve));
    await adapter.start((event) => {
      let take!: () => void;
      const taken = new Promise<void>((resolve) => (take = resolve));
      handedIn.push({ event, take });
      if (handedIn.length === 2) arrived();
      return taken;
    });
    const first = standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'one' });
    const second = standIn.inject({ chat: dmWith(BOB), from: BOB, text: 'two' });

    // Both are handed in while neither is taken: the batch is not processed one update at a time.
    await bothArrived;
    expect(handedIn.map((h) => h.event.text)).toEqual(['one', 'two']);
    expect(await within(standIn.waitForConfirmed(first), 500)).toBe(false);

    handedIn[0]!.take();
    expect(await within(standIn.waitForConfirmed(first), 500)).toBe(false); // 'two' is not taken yet
    handedIn[1]!.take();
    await standIn.waitForConfirmed(second);
  });

  it('confirms nothing once the sink refused (NotConfirmable), not even at stop; the next poller gets it', async () => {
    standIn = await startTelegramStandIn();
    const lost = new TelegramAdapter({
      token: standIn.token,
      apiRoot: standIn.apiRoot,
      pollTimeoutSeconds: 1,
    });
    const handedIn: string[] = [];
    await lost.start((event) => {
      handedIn.push(event.text);
      return Promise.reject(new NotConfirmable());
    });
    const update = standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'during the handover' });
    const confirmed = standIn.waitForConfirmed(update);
    await expect.poll(() => handedIn).toEqual(['during the handover']);
    // grammY's stop() would confirm it with one last getUpdates: refused.
    await lost.stop();
    expect(await within(confirmed, 1500)).toBe(false);

    // The instance that takes the bot over is handed the same update, takes it, and confirms it.
    adapter = new TelegramAdapter({ token: standIn.token, apiRoot: standIn.apiRoot, pollTimeoutSeconds: 1 });
    const taken: string[] = [];
    await adapter.start((event) => {
      taken.push(event.text);
      return Promise.resolve();
    });
    await confirmed;
    expect(taken).toEqual(['during the handover']);
  });
});
