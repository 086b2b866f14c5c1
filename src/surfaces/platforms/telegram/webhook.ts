/**
 * The listener of Telegram's webhook mode (docs/messaging.md, "Webhook mode").
 *
 * Telegram posts each update to the public URL set with setWebhook; a TLS proxy forwards it to this
 * loopback listener. grammY's webhookCallback checks the `X-Telegram-Bot-Api-Secret-Token` header in
 * constant time (401 when it is wrong or missing) and runs the bot's handlers; the answer is sent
 * only after the handler returned, and the adapter's handler returns only once the gateway has the
 * message on disk. Anything else (a handler error, grammY's own 10 s timeout) answers 500, so
 * Telegram delivers the update again; the gateway drops the redelivery of a message it took.
 *
 * The body is read here with a cap (an update is a few KB; Telegram's are far below the cap), only
 * on the configured path, only for POST.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { webhookCallback, type Bot } from 'grammy';

/** Far above any update Telegram sends; a body past it is refused with 413. */
export const MAX_UPDATE_BYTES = 1024 * 1024;

export interface WebhookListener {
  /** The port bound (the configured one, or the free one chosen for port 0). */
  readonly port: number;
  /** Stops accepting, waits for updates being handled, then closes. */
  close(): Promise<void>;
}

class BodyTooLarge extends Error {}
class BodyNotJson extends Error {}

export async function listenForWebhook(
  bot: Bot,
  options: { host: string; port: number; path: string; secretToken: string },
): Promise<WebhookListener> {
  // A grammY framework adapter for node:http, as its built-in one but with a bounded body.
  const adapter = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const header = req.headers['x-telegram-bot-api-secret-token'];
    return {
      get update() {
        return readJson(req);
      },
      header: Array.isArray(header) ? header[0] : header,
      end: () => res.end(),
      respond: (json: string) => res.writeHead(200, { 'content-type': 'application/json' }).end(json),
      unauthorized: () => res.writeHead(401).end('secret token is wrong'),
    };
  };
  // grammY types a custom adapter's handler loosely; ours resolves once the update was handled.
  const handle = webhookCallback(bot, adapter, { secretToken: options.secretToken }) as (
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ) => Promise<void>;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== options.path) return void res.writeHead(404).end();
    if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return;
      if (error instanceof BodyTooLarge) return void res.writeHead(413).end();
      if (error instanceof BodyNotJson) return void res.writeHead(400).end('the body is not JSON');
      // Not taken: Telegram delivers it again.
      res.writeHead(500).end();
    });
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

async function readJson(req: http.IncomingMessage): Promise<never> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_UPDATE_BYTES) throw new BodyTooLarge();
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as never;
  } catch {
    throw new BodyNotJson();
  }
}
