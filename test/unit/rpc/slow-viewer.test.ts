import { afterEach, describe, expect, it } from 'vitest';
import { decideSend, type ViewerConnection } from '../../../src/surfaces/rpc/connection.js';
import type { CloseCause } from '../../../src/surfaces/rpc/events.js';
import { connect, OWNER, startHarness, ticketProtocols, type Harness } from './harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.server.close();
  harness = undefined;
});

describe('LOC-11 bounded viewer buffers', () => {
  it('decides to send, drop or discard from state and backlog alone', () => {
    expect(decideSend('open', 0, 10, 100)).toBe('send');
    expect(decideSend('open', 95, 10, 100)).toBe('drop_slow_consumer');
    expect(decideSend('closing', 0, 10, 100)).toBe('discard');
    expect(decideSend('closed', 0, 10, 100)).toBe('discard');
    // A reply the client asked for is sent whatever its size, while the backlog before it is within
    // the limit.
    expect(decideSend('open', 0, 10_000, 100, 'reply')).toBe('send');
    expect(decideSend('open', 101, 10, 100, 'reply')).toBe('drop_slow_consumer');
  });

  it('a reply far over the bound reaches the client, and notifications after it still flow', async () => {
    harness = await startHarness({ limits: { maxBufferedBytes: 64 * 1024, closeGraceMs: 100 } });
    let dropped: CloseCause | undefined;
    harness.server.events.on('connection:close', (_connection, cause) => (dropped ??= cause));
    const client = await connect(
      harness.wsUrl,
      ticketProtocols(harness.tickets.mint('interactive', OWNER).ticket),
    );
    await client.call('ping', {});
    const bytes = 8 * 1024 * 1024;
    // Not reading while the reply is queued: the notifications after it must not count it.
    client.ws.pause();
    const answer = client.call('test.big', { bytes });
    await new Promise<void>((resolve) => {
      const sent = () => {
        const [connection] = harness!.server.connections;
        if (!connection) return resolve();
        for (let n = 1; n <= 3; n++) connection.notify('test.tick', { n });
        resolve();
      };
      // The reply is handed to the socket in the tick its handler resolves; notify after that.
      setImmediate(sent);
    });
    client.ws.resume();
    const reply = (await answer) as { result: { pad: string } };
    expect(reply.result.pad.length).toBe(bytes);
    await client.untilNotifications(3);
    expect(dropped).toBeUndefined();
    expect(harness.server.connections.size).toBe(1);
    client.close();
  });

  it('drops a viewer that stops reading while another keeps receiving', async () => {
    harness = await startHarness({ limits: { maxBufferedBytes: 256 * 1024, closeGraceMs: 100 } });
    const opened: ViewerConnection[] = [];
    harness.server.events.on('connection:open', (c) => opened.push(c));
    const fast = await connect(
      harness.wsUrl,
      ticketProtocols(harness.tickets.mint('interactive', OWNER).ticket),
    );
    const slow = await connect(
      harness.wsUrl,
      ticketProtocols(harness.tickets.mint('interactive', OWNER).ticket),
    );
    // The client's own call proves both connections are registered server-side before we start.
    await Promise.all([fast.call('ping', {}), slow.call('ping', {})]);
    slow.ws.pause();

    let dropped: { connection: ViewerConnection; cause: CloseCause } | undefined;
    harness.server.events.on('connection:close', (connection, cause) => (dropped ??= { connection, cause }));
    const pad = 'x'.repeat(64 * 1024);
    let sent = 0;
    // Each round waits for the fast viewer, so only the paused one can fall behind.
    while (!dropped && sent < 5_000) {
      sent += 1;
      for (const connection of harness.server.connections) connection.notify('test.tick', { n: sent, pad });
      await fast.untilNotifications(sent);
    }
    expect(dropped?.cause).toBe('slow_consumer');
    expect(dropped?.connection).toBe(opened[1]);
    expect(harness.server.connections.size).toBe(1);

    for (let i = 1; i <= 3; i++) {
      for (const connection of harness.server.connections)
        connection.notify('test.tick', { n: sent + i, pad: '' });
    }
    await fast.untilNotifications(sent + 3);
    expect((fast.notifications.at(-1) as { params: { n: number } }).params.n).toBe(sent + 3);
    expect((await fast.call('ping', {})).result).toEqual({ pong: true });
    fast.close();
  });
});
