import { Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { connect, OWNER, startHarness, ticketProtocols, type Harness } from './harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await harness?.server.close();
  harness = undefined;
});

/** Counts the writes the server makes on its side of the viewer's TCP connection. */
function countServerWrites(serverPort: number) {
  const writes = { single: 0, gathered: [] as number[] };
  const write = Reflect.get(Socket.prototype, '_write') as (...args: unknown[]) => void;
  const writev = Reflect.get(Socket.prototype, '_writev') as (...args: unknown[]) => void;
  vi.spyOn(Socket.prototype as unknown as { _write: typeof write }, '_write').mockImplementation(function (
    this: Socket,
    ...args: unknown[]
  ) {
    if (this.localPort === serverPort) writes.single++;
    write.apply(this, args);
  });
  vi.spyOn(Socket.prototype as unknown as { _writev: typeof writev }, '_writev').mockImplementation(function (
    this: Socket,
    ...args: unknown[]
  ) {
    if (this.localPort === serverPort) writes.gathered.push((args[0] as unknown[]).length);
    writev.apply(this, args);
  });
  return writes;
}

describe('a tick’s frames leave in one write', () => {
  it('gathers frames sent in the same tick into one write, in order, and sends later ticks on their own', async () => {
    harness = await startHarness();
    const client = await connect(
      harness.wsUrl,
      ticketProtocols(harness.tickets.mint('interactive', OWNER).ticket),
    );
    await client.call('ping', {}); // registered server-side
    const [connection] = [...harness.server.connections];
    const writes = countServerWrites(Number(new URL(harness.server.url).port));

    for (let n = 1; n <= 3; n++) connection!.notify('test.burst', { n });
    await client.untilNotifications(3);
    // One write of every chunk (ws hands over a frame's header and payload as two).
    expect(writes.single).toBe(0);
    expect(writes.gathered).toHaveLength(1);
    expect(writes.gathered[0]).toBeGreaterThanOrEqual(3);

    for (let n = 4; n <= 5; n++) {
      connection!.notify('test.burst', { n });
      await client.untilNotifications(n);
    }
    expect(writes.single + writes.gathered.length).toBe(3);
    expect(client.notifications.map((m) => (m as { params: { n: number } }).params.n)).toEqual([
      1, 2, 3, 4, 5,
    ]);
    client.close();
  });
});
