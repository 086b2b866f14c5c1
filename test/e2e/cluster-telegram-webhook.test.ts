/**
 * A Telegram bot in webhook mode in a cluster (SCL-1, issue 14, docs/cluster.md "Chat platforms in
 * a cluster"): two real daemons on one PostgreSQL schema, each with its webhook listener on a port
 * of its own, behind one proxy (a few lines here, as nginx with `proxy_next_upstream error` would
 * be) that tries each instance in turn. Only the lease holder listens; a post reaching a standby is
 * refused at the connection; after a SIGKILL of the holder Telegram's retried post reaches the new
 * holder and the message is answered once.
 */
import { once } from 'node:events';
import http from 'node:http';
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import { startTelegramStandIn } from '../fixtures/telegram-standin.js';
import { unhandedPort } from '../shared/ports.js';
import { useBotCluster } from './cluster-harness.js';

const TOKEN_ENV = 'GH_E2E_TELEGRAM_TOKEN';
const SECRET_ENV = 'GH_E2E_TELEGRAM_WEBHOOK_SECRET';
const SECRET = 'e2e-cluster-webhook-secret-0123';
const BOT = 'telegram:123456';
const said = (text: string) => `${DEMO_LABEL}: you said: ${text}`;

const telegram = useBotCluster(startTelegramStandIn);
let proxy: http.Server;
let proxyPort = 0;
/** The instances' listener ports, by node name. */
const ports = new Map<string, number>();
/** What the proxy met at each instance: the port and `refused` or the HTTP status. */
const tries: { port: number; outcome: string }[] = [];

/** Forwards a post to each instance in turn; the first that accepts the connection answers. */
async function forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  for (const port of ports.values()) {
    try {
      const answer = await fetch(`http://127.0.0.1:${port}${req.url}`, {
        method: req.method,
        headers: {
          'content-type': 'application/json',
          'x-telegram-bot-api-secret-token': String(req.headers['x-telegram-bot-api-secret-token'] ?? ''),
        },
        body,
      });
      tries.push({ port, outcome: String(answer.status) });
      res.writeHead(answer.status).end(Buffer.from(await answer.arrayBuffer()));
      return;
    } catch {
      tries.push({ port, outcome: 'refused' });
    }
  }
  res.writeHead(502).end();
}

beforeAll(async () => {
  proxy = http.createServer((req, res) => void forward(req, res).catch(() => res.writeHead(502).end()));
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  proxyPort = (proxy.address() as net.AddressInfo).port;
  // Outside the ephemeral range: the standby's port must stay unbound until it takes the bot over.
  for (const name of ['a', 'b']) ports.set(name, await unhandedPort());
});

afterAll(async () => {
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
});

const repliesTo = (chatId: number) =>
  telegram.standIn.sent((c) => c.payload.chat_id === chatId).map((c) => String(c.payload.text));

describe('a Telegram bot in webhook mode in a cluster', { timeout: 180_000 }, () => {
  it('only the holder listens; after a SIGKILL the retried post reaches the new holder and is answered once', async () => {
    const c = await telegram.start({
      size: 2,
      // Renewals may stall for up to half of it before the instance stops itself: two gate runs side by
      // side (load 20-27) stalled renewals for more than 3 s.
      leaseS: 10,
      env: { [TOKEN_ENV]: telegram.standIn.token, [SECRET_ENV]: SECRET },
      platform: (name) => [
        'telegram:',
        `  token_env: ${TOKEN_ENV}`,
        `  api_root: ${telegram.standIn.apiRoot}`,
        '  mode: webhook',
        '  webhook:',
        `    url: http://127.0.0.1:${proxyPort}/telegram`,
        `    secret_token_env: ${SECRET_ENV}`,
        `    port: ${ports.get(name)}`,
      ],
    });
    const held = await c.until(
      'an instance holds the bot',
      () => c.botLease(BOT),
      (l) => l?.owner_epoch != null,
    );
    const first = c.byEpoch(held!.owner_epoch!);
    const standbyPort = ports.get(c.nodes[1 - first]!.name)!;
    expect(telegram.standIn.webhook()?.url).toBe(`http://127.0.0.1:${proxyPort}/telegram`);

    const chat = { id: 930, type: 'private' as const };
    const from = { id: 930, first_name: 'Ana' };
    telegram.standIn.inject({ chat, from, text: 'by webhook' });
    await telegram.standIn.waitForCall(
      (call) => call.method === 'sendMessage' && call.payload.chat_id === chat.id,
    );
    // The standby instance listens on nothing: a post forwarded to it is refused at the connection.
    await expect(
      fetch(`http://127.0.0.1:${standbyPort}/telegram`, { method: 'POST', body: '{}' }),
    ).rejects.toThrow();

    await c.repliesSettled();
    await c.kill(first);
    telegram.standIn.inject({ chat, from, text: 'after the kill' });
    await c.until(
      'the other instance holds the bot',
      () => c.botLease(BOT),
      (l) => l?.owner_epoch === c.daemon(1 - first).epoch,
    );
    await telegram.standIn.waitForCall(
      (call) => call.method === 'sendMessage' && call.payload.text === said('after the kill'),
    );
    expect(repliesTo(chat.id)).toEqual([said('by webhook'), said('after the kill')]);
    // Telegram's posts of it were answered 2xx once, by the new holder; before that, refused.
    const posts = telegram.standIn.webhookPosts.filter((p) => p.status === 200);
    expect(posts).toHaveLength(2);
    expect(tries.filter((t) => t.port === standbyPort && t.outcome === '200')).toHaveLength(1);
  });
});
