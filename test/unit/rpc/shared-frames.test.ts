/**
 * A session event is framed once and the same bytes go to every viewer's stream (issue 32 aim 5):
 * real `ws` clients must read each one as the text message it is, at every length the frame header
 * encodes differently (7-bit, 16-bit and 64-bit lengths), in order with replies sent through `ws`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SharedEvent, type EventNotification } from '../../../src/domain/local/hub.js';
import { textFrame } from '../../../src/surfaces/rpc/text-frame.js';
import { connect, OWNER, startHarness, ticketProtocols, type Client, type Harness } from './harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.server.close();
  harness = undefined;
});

const event = (seq: number, text: string): EventNotification => ({
  session_id: 's',
  epoch: 1,
  seq,
  event: { type: 'text.delta', text },
});

describe('one frame for every viewer', () => {
  it('frames a text message as RFC 6455 says for each length class', () => {
    expect([...textFrame(Buffer.from('hi'))]).toEqual([0x81, 2, 0x68, 0x69]);
    const medium = textFrame(Buffer.alloc(300, 0x61));
    expect([medium[0], medium[1], medium.readUInt16BE(2), medium.length]).toEqual([0x81, 126, 300, 304]);
    const large = textFrame(Buffer.alloc(70_000, 0x61));
    expect([large[0], large[1], Number(large.readBigUInt64BE(2)), large.length]).toEqual([
      0x81, 127, 70_000, 70_010,
    ]);
  });

  it('sends the same bytes to every viewer, read by real clients whole and in order', async () => {
    harness = await startHarness();
    const clients: Client[] = [];
    for (let i = 0; i < 3; i += 1) {
      const ticket = harness.tickets.mint('interactive', OWNER).ticket;
      const client = await connect(harness.wsUrl, ticketProtocols(ticket));
      await client.call('ping', {});
      clients.push(client);
    }
    const connections = [...harness.server.connections];
    expect(connections).toHaveLength(3);

    // Lengths across the header's three forms, the 16-bit limit's edges included.
    const lengths = [0, 5, 100, 125, 126, 1_000, 65_535, 65_536, 200_000];
    const notes = lengths.map(
      (n, i) => new SharedEvent(event(i + 1, 'é'.repeat(Math.floor(n / 2)) + 'x'.repeat(n % 2))),
    );
    const again = (): never => {
      throw new Error('encoded a second time');
    };
    for (const note of notes) {
      for (const connection of connections) expect(connection.deliver(note)).toBe(true);
      // Encoded once, by the first connection: a second encoding would throw here.
      expect(note.encoded(again)).toMatchObject({ frame: expect.any(Buffer) as unknown });
    }
    // A reply through `ws` between events keeps its place and its shape.
    const replies = clients.map((c) => c.call('ping', {}));
    const last = new SharedEvent(event(lengths.length + 1, 'after the reply'));
    for (const connection of connections) connection.deliver(last);

    for (const client of clients) {
      await client.untilNotifications(lengths.length + 1);
      const got = client.notifications.map(
        (m) => m as unknown as { method: string; params: EventNotification },
      );
      expect(got.map((m) => m.method)).toEqual(Array(lengths.length + 1).fill('session.event'));
      expect(got.map((m) => m.params)).toEqual([...notes, last].map((n) => n.params));
    }
    for (const reply of await Promise.all(replies)) expect(reply.error).toBeUndefined();
    for (const client of clients) client.close();
  });
});
