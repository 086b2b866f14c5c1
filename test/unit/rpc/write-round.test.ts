/**
 * A write round (issue 32 aim 5): what viewers are given during one turn of the event loop leaves
 * in one write per connection when that turn ends, the session events' frames joined once into one
 * buffer that every viewer with the same run writes. Real servers, real `ws` clients.
 */
import { Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SharedEvent, type EventNotification } from '../../../src/domain/local/hub.js';
import type { ViewerConnection } from '../../../src/surfaces/rpc/connection.js';
import type { CloseCause } from '../../../src/surfaces/rpc/events.js';
import {
  HOLD_CAP_MS,
  HOLD_FROM_MS,
  holdAfter,
  sameRun,
  writeRound,
  WriteRound,
  type RoundMember,
} from '../../../src/surfaces/rpc/write-round.js';
import { connect, OWNER, startHarness, ticketProtocols, type Client, type Harness } from './harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await harness?.server.close();
  harness = undefined;
});

const event = (seq: number, text = `event ${seq}`): SharedEvent =>
  new SharedEvent({ session_id: 's', epoch: 1, seq, event: { type: 'text.delta', text } });

type Received = { method?: string; params?: EventNotification & { n?: number } };
const seqs = (client: Client): Array<number | string> =>
  client.notifications.map((m) => {
    const note = m as Received;
    return note.method === 'session.event' ? note.params!.seq : `${note.method}:${note.params?.n}`;
  });

async function viewers(count: number, limits?: Parameters<typeof startHarness>[0]) {
  harness = await startHarness(limits);
  const clients: Client[] = [];
  for (let i = 0; i < count; i++) {
    const client = await connect(
      harness.wsUrl,
      ticketProtocols(harness.tickets.mint('interactive', OWNER).ticket),
    );
    await client.call('ping', {}); // registered server-side
    clients.push(client);
  }
  const connections = [...harness.server.connections];
  expect(connections).toHaveLength(count);
  return { clients, connections };
}

/** Every buffer the server writes to a viewer's TCP connection, one entry per write. */
function serverWrites(serverPort: number): Buffer[][] {
  const writes: Buffer[][] = [];
  const write = Reflect.get(Socket.prototype, '_write') as (...args: unknown[]) => void;
  const writev = Reflect.get(Socket.prototype, '_writev') as (...args: unknown[]) => void;
  vi.spyOn(Socket.prototype as unknown as { _write: typeof write }, '_write').mockImplementation(function (
    this: Socket,
    ...args: unknown[]
  ) {
    if (this.localPort === serverPort) writes.push([args[0] as Buffer]);
    write.apply(this, args);
  });
  vi.spyOn(Socket.prototype as unknown as { _writev: typeof writev }, '_writev').mockImplementation(function (
    this: Socket,
    ...args: unknown[]
  ) {
    if (this.localPort === serverPort)
      writes.push((args[0] as Array<{ chunk: Buffer }>).map((entry) => entry.chunk));
    writev.apply(this, args);
  });
  return writes;
}

describe('the write round itself', () => {
  it('flushes each member once however often it joined, and joins a run of frames once', () => {
    const scheduled: Array<() => void> = [];
    const round = new WriteRound((flush) => {
      scheduled.push(flush);
      return () => undefined;
    });
    const a = Buffer.from('a');
    const b = Buffer.from('b');
    const written: Buffer[] = [];
    const member: RoundMember = { flushRound: (joined) => written.push(joined([a, b])) };
    const other: RoundMember = { flushRound: (joined) => written.push(joined([a, b]), joined([b])) };
    round.join(member);
    round.join(other);
    expect(scheduled).toHaveLength(1);
    scheduled[0]!();
    expect(written.map((w) => w.toString())).toEqual(['ab', 'ab', 'b']);
    // The same run for a second viewer is the very same buffer; a single frame is itself.
    expect(written[1]).toBe(written[0]);
    expect(written[2]).toBe(b);
    // The next round is scheduled anew, and does not reuse the last round's buffer.
    round.join(member);
    expect(scheduled).toHaveLength(2);
    scheduled[1]!();
    expect(written[3]).not.toBe(written[0]);
    expect(written[3]!.toString()).toBe('ab');
  });

  it('tells runs apart by the frames they hold, not by their bytes', () => {
    const a = Buffer.from('x');
    const copy = Buffer.from('x');
    expect(sameRun([a, a], [a, a])).toBe(true);
    expect(sameRun([a], [a, a])).toBe(false);
    expect(sameRun([a], [copy])).toBe(false);
  });

  it('flushes every member when one of them fails, and reports the failure', () => {
    const scheduled: Array<() => void> = [];
    const round = new WriteRound((flush) => {
      scheduled.push(flush);
      return () => undefined;
    });
    const flushed: string[] = [];
    round.join({
      flushRound: () => {
        throw new Error('socket gone');
      },
    });
    round.join({ flushRound: () => flushed.push('second') });
    expect(() => scheduled[0]!()).toThrow('socket gone');
    expect(flushed).toEqual(['second']);
    round.join({ flushRound: () => flushed.push('next round') });
    scheduled[1]!();
    expect(flushed).toEqual(['second', 'next round']);
  });
});

describe('a long round holds the next one back', () => {
  it('holds nothing after a quick round, as long as the last round took after a long one, up to the cap', () => {
    expect(holdAfter(0)).toBe(0);
    expect(holdAfter(HOLD_FROM_MS / 2)).toBe(0);
    expect(holdAfter(HOLD_FROM_MS)).toBe(HOLD_FROM_MS);
    expect(holdAfter(2.5)).toBe(2.5);
    expect(holdAfter(HOLD_CAP_MS * 10)).toBe(HOLD_CAP_MS);
    expect(holdAfter(Number.NaN)).toBe(0);
  });

  it('schedules each round with the hold its previous flush earned', () => {
    const scheduled: Array<{ flush: () => void; delay: number }> = [];
    let clock = 0;
    const round = new WriteRound(
      (flush, delay) => {
        scheduled.push({ flush, delay });
        return () => undefined;
      },
      () => clock,
    );
    // A round whose writes take 3 ms (the clock moves while the member writes).
    const slow: RoundMember = { flushRound: () => (clock += 3) };
    const quick: RoundMember = { flushRound: () => (clock += 0.1) };
    round.join(slow);
    expect(scheduled[0]!.delay).toBe(0);
    scheduled[0]!.flush();
    round.join(quick);
    expect(scheduled[1]!.delay).toBe(3);
    scheduled[1]!.flush();
    // The quick round earned no hold: the next frames leave at the end of the loop's turn again.
    // A round of 50 ms (a thousand viewers on a busy machine) holds the next one only up to the cap.
    round.join({ flushRound: () => (clock += 50) });
    expect(scheduled[2]!.delay).toBe(0);
    scheduled[2]!.flush();
    round.join(quick);
    expect(scheduled[3]!.delay).toBe(HOLD_CAP_MS);
  });
});

describe('a reply is not held', () => {
  it('hurries a held round to the end of the loop turn, once, and leaves an unheld one alone', () => {
    const scheduled: Array<{ flush: () => void; delay: number; cancelled: boolean }> = [];
    let clock = 0;
    const round = new WriteRound(
      (flush, delay) => {
        const entry = { flush, delay, cancelled: false };
        scheduled.push(entry);
        return () => (entry.cancelled = true);
      },
      () => clock,
    );
    const flushed: string[] = [];
    round.join({ flushRound: () => (clock += 5) });
    round.hurry(); // not held: nothing to hurry
    expect(scheduled).toHaveLength(1);
    scheduled[0]!.flush();
    // The next round is held 5 ms; a reply joins it and it ends with the loop's turn instead.
    round.join({ flushRound: () => flushed.push('events') });
    expect(scheduled[1]!.delay).toBe(5);
    round.hurry();
    round.hurry();
    expect(scheduled[1]!.cancelled).toBe(true);
    expect(scheduled).toHaveLength(3);
    expect(scheduled[2]!.delay).toBe(0);
    scheduled[2]!.flush();
    expect(flushed).toEqual(['events']);
  });

  it('writes a reply at once, with the frames before it, without waiting for the round to end', async () => {
    const { clients, connections } = await viewers(1);
    // The round never ends in this test: whatever waits for it never leaves.
    const join = vi.spyOn(writeRound, 'join').mockImplementation(() => undefined);
    const hurry = vi.spyOn(writeRound, 'hurry').mockImplementation(() => undefined);
    try {
      connections[0]!.notify('test.before', { n: 1 });
      const answer = await clients[0]!.call('ping', {});
      expect(answer).toMatchObject({ result: expect.anything() as unknown });
      // The notification corked before the reply left with it, in order.
      expect(clients[0]!.notifications.map((m) => (m as { method?: string }).method)).toEqual([
        'test.before',
      ]);
    } finally {
      join.mockRestore();
      hurry.mockRestore();
      clients[0]!.close();
    }
  });

  it('a connection hurries its round for a reply, never for event frames alone', async () => {
    const { clients, connections } = await viewers(1);
    const hurry = vi.spyOn(writeRound, 'hurry');
    try {
      expect(connections[0]!.deliver(event(1))).toBe(true);
      await clients[0]!.untilNotifications(1);
      expect(hurry).not.toHaveBeenCalled();
      await clients[0]!.call('ping', {});
      expect(hurry).toHaveBeenCalled();
    } finally {
      hurry.mockRestore();
      clients[0]!.close();
    }
  });
});

describe('viewers write once per round', () => {
  it('sends a tick of events to every viewer as one write of one shared buffer', async () => {
    const { clients, connections } = await viewers(3);
    const writes = serverWrites(Number(new URL(harness!.server.url).port));

    const notes = [event(1), event(2), event(3)];
    for (const note of notes)
      for (const connection of connections) expect(connection.deliver(note)).toBe(true);
    for (const client of clients) await client.untilNotifications(3);

    // One write per viewer, of one buffer: the three frames joined once for all of them.
    expect(writes.map((chunks) => chunks.length)).toEqual([1, 1, 1]);
    const [first] = writes[0]!;
    for (const [chunk] of writes) expect(chunk).toBe(first);
    for (const client of clients) expect(seqs(client)).toEqual([1, 2, 3]);
    for (const client of clients) client.close();
  });

  it('keeps frames through `ws` in their place among the events of the same tick', async () => {
    const { clients, connections } = await viewers(1);
    const [connection] = connections;
    const [client] = clients;
    const writes = serverWrites(Number(new URL(harness!.server.url).port));

    connection!.deliver(event(1));
    connection!.deliver(event(2));
    connection!.notify('test.between', { n: 1 });
    connection!.deliver(event(3));
    await client!.untilNotifications(4);

    expect(seqs(client!)).toEqual([1, 2, 'test.between:1', 3]);
    // Still one write: the socket was corked for the round.
    expect(writes).toHaveLength(1);
    client!.close();
  });

  it('writes the events of the tick before its close frame', async () => {
    const { clients, connections } = await viewers(1);
    const [client] = clients;
    const closed = new Promise<number>((resolve) => client!.ws.once('close', resolve));
    connections[0]!.deliver(event(1));
    connections[0]!.deliver(event(2));
    connections[0]!.close('server_shutdown');
    expect(await closed).toBe(1001);
    expect(seqs(client!)).toEqual([1, 2]);
  });

  it('sheds a viewer that stops reading by the byte bound while another gets every event', async () => {
    const { clients, connections } = await viewers(2, {
      limits: { maxBufferedBytes: 256 * 1024, maxInFlight: 64, closeGraceMs: 100 },
    });
    const [fast, slow] = clients;
    const [, slowConnection] = connections;
    slow!.ws.pause();
    let dropped: { connection: ViewerConnection; cause: CloseCause } | undefined;
    harness!.server.events.on('connection:close', (connection, cause) => (dropped ??= { connection, cause }));

    const pad = 'x'.repeat(64 * 1024);
    let seq = 0;
    // Each round waits for the reading viewer, so only the paused one falls behind.
    while (!dropped && seq < 5_000) {
      seq += 1;
      const note = event(seq, pad);
      for (const connection of connections) connection.deliver(note);
      await fast!.untilNotifications(seq);
    }
    expect(dropped?.cause).toBe('slow_consumer');
    expect(dropped?.connection).toBe(slowConnection);
    // Told within the bound, not after buffering everything: a few frames past 256 KiB of backlog.
    expect(seq).toBeLessThan(1_000);

    for (let i = 1; i <= 3; i++)
      for (const connection of harness!.server.connections) connection.deliver(event(seq + i));
    await fast!.untilNotifications(seq + 3);
    expect(seqs(fast!)).toEqual(Array.from({ length: seq + 3 }, (_, i) => i + 1));
    fast!.close();
  });
});
