/**
 * Telegram's webhook mode against the Bot API stand-in, which posts updates to the webhook as
 * Telegram does (the secret-token header, retried until a 2xx answer): the secret is checked, an
 * update is answered only once taken, a failed take is delivered again, and the webhook outlives a
 * stop so nothing sent meanwhile is lost.
 */
import { once } from 'node:events';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { MessageEvent } from '../../../src/domain/messaging/adapter.js';
import { TelegramAdapter } from '../../../src/surfaces/platforms/telegram/adapter.js';
import { ALICE, dmWith } from '../../fixtures/messaging-harness.js';
import { startTelegramStandIn, type TelegramStandIn } from '../../fixtures/telegram-standin.js';
import { unhandedPort } from '../../shared/ports.js';

let standIn: TelegramStandIn | undefined;
let adapter: TelegramAdapter | undefined;
afterEach(async () => {
  await adapter?.stop();
  await standIn?.close();
  adapter = undefined;
});

const SECRET = 'webhook-secret_0123456789';

function webhookAdapter(s: TelegramStandIn, port: number): TelegramAdapter {
  return new TelegramAdapter({
    token: s.token,
    apiRoot: s.apiRoot,
    webhook: { url: `http://127.0.0.1:${port}/telegram/hook`, secretToken: SECRET, host: '127.0.0.1', port },
  });
}

/** A stand-in and a started webhook adapter whose sink takes every event at once. */
async function startTaking(): Promise<{
  standIn: TelegramStandIn;
  adapter: TelegramAdapter;
  port: number;
  handedIn: MessageEvent[];
}> {
  const s = (standIn = await startTelegramStandIn());
  const port = await unhandedPort();
  const a = (adapter = webhookAdapter(s, port));
  const handedIn: MessageEvent[] = [];
  await a.start((event) => {
    handedIn.push(event);
    return Promise.resolve();
  });
  return { standIn: s, adapter: a, port, handedIn };
}

const within = (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe('Telegram webhook mode', () => {
  it('sets the webhook with its secret, answers an update once taken, and reports webhook mode', async () => {
    standIn = await startTelegramStandIn();
    const port = await unhandedPort();
    adapter = webhookAdapter(standIn, port);
    const handedIn: MessageEvent[] = [];
    let take: () => void = () => undefined;
    await adapter.start((event) => {
      handedIn.push(event);
      return new Promise<void>((resolve) => (take = resolve));
    });
    expect(standIn.webhook()).toEqual({
      url: `http://127.0.0.1:${port}/telegram/hook`,
      secret_token: SECRET,
    });
    expect(adapter.status()).toMatchObject({ state: 'running', mode: 'webhook', account: '@gatehouse_bot' });
    expect(adapter.webhookPort()).toBe(port);

    const update = standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'by webhook' });
    // Handed in, but Telegram is not answered before the gateway took it.
    await expect.poll(() => handedIn.length).toBe(1);
    expect(handedIn[0]!.text).toBe('by webhook');
    expect(await within(standIn.waitForConfirmed(update), 300)).toBe(false);
    take();
    await standIn.waitForConfirmed(update);
    expect(standIn.webhookPosts).toEqual([{ update_id: update, status: 200 }]);
  });

  it('refuses a post without the secret or with a wrong one, and hands nothing in', async () => {
    const { port, handedIn } = await startTaking();
    const update = {
      update_id: 99,
      message: { message_id: 5, date: 0, chat: dmWith(ALICE), from: ALICE, text: 'forged' },
    };
    const post = (headers: Record<string, string>) =>
      fetch(`http://127.0.0.1:${port}/telegram/hook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(update),
      });
    expect((await post({})).status).toBe(401);
    expect((await post({ 'x-telegram-bot-api-secret-token': 'wrong' })).status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${port}/elsewhere`, { method: 'POST' })).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${port}/telegram/hook`)).status).toBe(405);
    const notJson = await fetch(`http://127.0.0.1:${port}/telegram/hook`, {
      method: 'POST',
      headers: { 'x-telegram-bot-api-secret-token': SECRET },
      body: '{not json',
    });
    expect(notJson.status).toBe(400);
    expect(handedIn).toEqual([]);
    // The right secret is taken.
    expect((await post({ 'x-telegram-bot-api-secret-token': SECRET })).status).toBe(200);
    expect(handedIn.map((e) => e.text)).toEqual(['forged']);
  });

  it('answers 500 when the take fails, so Telegram posts the update again', async () => {
    standIn = await startTelegramStandIn();
    const port = await unhandedPort();
    adapter = webhookAdapter(standIn, port);
    let attempts = 0;
    await adapter.start(() => {
      attempts++;
      return attempts === 1 ? Promise.reject(new Error('the disk is full')) : Promise.resolve();
    });
    const update = standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'again' });
    await standIn.waitForConfirmed(update);
    expect(attempts).toBe(2);
    expect(standIn.webhookPosts.map((p) => p.status)).toEqual([500, 200]);
  });

  it('keeps the webhook across a stop: what Telegram held meanwhile arrives after the next start', async () => {
    standIn = await startTelegramStandIn();
    const port = await unhandedPort();
    adapter = webhookAdapter(standIn, port);
    await adapter.start(() => Promise.resolve());
    await adapter.stop();
    expect(standIn.webhook()).not.toBeNull();
    const update = standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'while down' });
    await expect.poll(() => standIn!.webhookPosts.length).toBeGreaterThan(0);
    expect(standIn.webhookPosts[0]!.status).toBe(0); // nobody listening: kept by Telegram

    const handedIn: MessageEvent[] = [];
    adapter = webhookAdapter(standIn, port);
    await adapter.start((event) => {
      handedIn.push(event);
      return Promise.resolve();
    });
    await standIn.waitForConfirmed(update);
    expect(handedIn.map((e) => e.text)).toEqual(['while down']);
  });

  it('a polling adapter deletes the webhook first (getUpdates is refused with 409 while one is set)', async () => {
    standIn = await startTelegramStandIn();
    const port = await unhandedPort();
    adapter = webhookAdapter(standIn, port);
    await adapter.start(() => Promise.resolve());
    await adapter.stop();
    adapter = new TelegramAdapter({ token: standIn.token, apiRoot: standIn.apiRoot, pollTimeoutSeconds: 1 });
    const handedIn: MessageEvent[] = [];
    await adapter.start((event) => {
      handedIn.push(event);
      return Promise.resolve();
    });
    expect(standIn.webhook()).toBeNull();
    standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'polled' });
    await expect.poll(() => handedIn.map((e) => e.text)).toEqual(['polled']);
  });

  it('fails to start, naming why, when the port is taken — without the secret in the reason', async () => {
    standIn = await startTelegramStandIn();
    const blocker = net.createServer().listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    const { port } = blocker.address() as net.AddressInfo;
    try {
      adapter = webhookAdapter(standIn, port);
      const started = adapter.start(() => Promise.resolve());
      await expect(started).rejects.toThrow(/cannot start webhook: .*EADDRINUSE/);
      expect(adapter.status().state).toBe('failed');
      expect(adapter.status().detail).not.toContain(SECRET);
    } finally {
      blocker.close();
    }
  });
});

describe('Telegram webhook mode: approval buttons', () => {
  it('asks for callback queries, hands a click in bound to its prompt, and answers it once taken', async () => {
    const { standIn, adapter, handedIn } = await startTaking();
    const setWebhook = standIn.calls.find((c) => c.method === 'setWebhook')!;
    expect(setWebhook.payload.allowed_updates).toEqual(['message', 'callback_query']);
    standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'hello' });
    await expect.poll(() => handedIn.length).toBe(1);
    const prompt = {
      prompt_id: 'prm_AAAAAAAAAAAAAAAAAAAAAA',
      execution_generation: 37,
      text: 'Approval needed',
    };
    const sent = await adapter.approvals.ask(String(ALICE.id), null, prompt);
    const click = standIn.click(
      ALICE.id,
      Number(sent.message_id),
      ALICE,
      'gh:s:11:prm_AAAAAAAAAAAAAAAAAAAAAA',
    );
    await standIn.waitForConfirmed(click);
    expect(handedIn[1]).toMatchObject({
      text: '/approve session',
      prompt: { prompt_id: prompt.prompt_id, execution_generation: 37 },
    });
    expect(handedIn[1]!.source.message_id).toBe(`cb${standIn.queryId(click)}`);
    expect(await standIn.waitForAnswer(standIn.queryId(click))).toMatchObject({ text: null });
    await adapter.approvals.settle(
      String(ALICE.id),
      null,
      sent.message_id,
      prompt,
      'approved for the session',
    );
    expect(standIn.shown(ALICE.id, Number(sent.message_id))).toEqual({
      text: 'Approval needed\n\nAnswered: approved for the session.',
      reply_markup: undefined,
    });
  });
});
