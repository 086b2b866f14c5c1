/**
 * `GatewayClient.next` waits for a notification on a real WebSocket (a `ws` server on loopback):
 * it resolves with the first that matches, and rejects with ConnectionClosedError as soon as the
 * connection closes — a killed or stopped daemon sends nothing more, so waiting out the timeout
 * would only hide why.
 */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { ConnectionClosedError, GatewayClient } from '../../../src/surfaces/client/rpc-client.js';

let server: WebSocketServer | null = null;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = null;
});

/** A client connected to a fresh server, and the server's side of that connection. */
async function pair(): Promise<{ client: GatewayClient; peer: WebSocket }> {
  server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((resolve) => server!.once('listening', resolve));
  const peer = new Promise<WebSocket>((resolve) => server!.once('connection', resolve));
  const { port } = server.address() as AddressInfo;
  const client = await GatewayClient.open(new WebSocket(`ws://127.0.0.1:${port}`));
  return { client, peer: await peer };
}

const notify = (peer: WebSocket, n: number): void =>
  peer.send(JSON.stringify({ jsonrpc: '2.0', method: 'tick', params: { n } }));

describe('GatewayClient.next', () => {
  it('resolves with the first matching notification', async () => {
    const { client, peer } = await pair();
    const second = client.next((n) => (n.params as { n: number }).n === 2, 5_000);
    notify(peer, 1);
    notify(peer, 2);
    await expect(second).resolves.toMatchObject({ method: 'tick', params: { n: 2 } });
    await client.close();
  });

  it('rejects with ConnectionClosedError when the connection closes while it waits, and after', async () => {
    const { client, peer } = await pair();
    const waiting = client.next(() => true, 60_000);
    peer.terminate(); // as a SIGKILLed daemon's socket goes
    await expect(waiting).rejects.toBeInstanceOf(ConnectionClosedError);
    await expect(client.next(() => true, 60_000)).rejects.toBeInstanceOf(ConnectionClosedError);
  });

  it('still times out when nothing matches on an open connection', async () => {
    const { client, peer } = await pair();
    notify(peer, 1);
    await expect(client.next((n) => n.method === 'other', 200)).rejects.toThrow(
      'no matching notification within 200 ms',
    );
    await client.close();
  });
});
