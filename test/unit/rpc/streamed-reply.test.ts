import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { JsonText } from '../../../src/domain/json-text.js';
import { jsonPieces } from '../../../src/surfaces/rpc/json-slices.js';
import {
  FRAGMENT_CHARS,
  SLICE_MS,
  writeStreamed,
  type FragmentSink,
} from '../../../src/surfaces/rpc/streamed-reply.js';
import {
  connect,
  OWNER,
  recordingLogger,
  startHarness,
  testDispatcher,
  ticketProtocols,
  type Harness,
} from './harness.js';

/** Reads back the frames a sink was given: [fin, opcode, payload] each (RFC 6455 §5.2, unmasked). */
function parseFrame(frame: Buffer): { fin: boolean; opcode: number; payload: Buffer } {
  let length = frame[1]! & 0x7f;
  let at = 2;
  if (length === 126) {
    length = frame.readUInt16BE(2);
    at = 4;
  } else if (length === 127) {
    length = Number(frame.readBigUInt64BE(2));
    at = 10;
  }
  expect(frame.length).toBe(at + length);
  return { fin: (frame[0]! & 0x80) !== 0, opcode: frame[0]! & 0x0f, payload: frame.subarray(at) };
}

function recordingSink(options: { fullEvery?: number; closeAfter?: number } = {}) {
  const frames: Buffer[] = [];
  let drains = 0;
  const sink: FragmentSink = {
    open: () => options.closeAfter === undefined || frames.length < options.closeAfter,
    write: (frame) => {
      frames.push(frame);
      return options.fullEvery === undefined || frames.length % options.fullEvery !== 0;
    },
    drained: () => {
      drains += 1;
      return new Promise((resolve) => setImmediate(resolve));
    },
  };
  return { sink, frames, drains: () => drains };
}

const history = (count: number) => ({
  jsonrpc: '2.0',
  id: 3,
  result: {
    messages: Array.from({ length: count }, (_, i) => ({
      id: i,
      role: 'tool',
      content: `Ausgabe ${i}: ✓ 😀 `.repeat(40),
    })),
  },
});

describe('a long reply streamed as one fragmented message (issue 32 aim 3)', () => {
  it('writes fragments whose payloads join to the bytes of JSON.stringify', async () => {
    const value = history(5_000);
    const { sink, frames, drains } = recordingSink({ fullEvery: 2 });
    expect(await writeStreamed(jsonPieces(value), sink)).toBe('sent');
    const parsed = frames.map(parseFrame);
    expect(parsed.length).toBeGreaterThan(3);
    expect(parsed[0]!.opcode).toBe(1);
    expect(parsed.slice(1).every((f) => f.opcode === 0)).toBe(true);
    expect(parsed.map((f) => f.fin)).toEqual(parsed.map((_, i) => i === parsed.length - 1));
    expect(parsed.every((f) => f.payload.length > 0)).toBe(true);
    // Each fragment holds whole characters: each payload is valid UTF-8 on its own.
    for (const f of parsed)
      expect(Buffer.from(f.payload.toString('utf8'), 'utf8').equals(f.payload)).toBe(true);
    expect(
      Buffer.concat(parsed.map((f) => f.payload)).equals(Buffer.from(JSON.stringify(value), 'utf8')),
    ).toBe(true);
    // A full stream was waited on before anything more was serialized.
    expect(drains()).toBeGreaterThan(0);
    expect(Math.max(...parsed.map((f) => f.payload.length))).toBeLessThanOrEqual(
      FRAGMENT_CHARS * 3 + 64 * 1024 * 3,
    );
  });

  it('gives the event loop a turn once a slice has run, even when every fragment finds room', async () => {
    // A clock that advances with the bytes written (1 ms per 100,000): each fragment takes about
    // 2.6 ms of it, under one slice, and the sink always has room, as a fast local reader does.
    let written = 0;
    const clock = () => written / 100_000;
    const sink: FragmentSink = {
      open: () => true,
      write: (frame) => {
        written += frame.length;
        return true;
      },
      drained: () => Promise.resolve(),
    };
    // The clock at each turn of the loop while the reply is written.
    const turns: number[] = [];
    let done = false;
    const tick = () => {
      turns.push(clock());
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    expect(await writeStreamed(jsonPieces(history(20_000)), sink, clock)).toBe('sent');
    done = true;
    const end = clock();
    expect(end).toBeGreaterThan(10 * SLICE_MS);
    // No stretch without a turn longer than a slice and the fragment that ends it (at most three
    // bytes a character); before, the whole reply was one stretch.
    const gaps = [...turns, end].map((at, i, all) => at - (i === 0 ? 0 : all[i - 1]!));
    expect(Math.max(...gaps)).toBeLessThanOrEqual(SLICE_MS + (FRAGMENT_CHARS * 3) / 100_000);
  });

  it('writes a serialized transcript (JsonText) among the other pieces, each fragment whole UTF-8', async () => {
    const messages = history(3_000).result.messages;
    const body: Uint8Array[] = [];
    for (let i = 0; i < messages.length; i += 100)
      body.push(
        new TextEncoder().encode(
          `${i > 0 ? ',' : ''}${messages
            .slice(i, i + 100)
            .map((m) => JSON.stringify(m))
            .join(',')}`,
        ),
      );
    const reply = { jsonrpc: '2.0', id: 5, result: { messages: new JsonText(messages.length, body), n: 1 } };
    const { sink, frames } = recordingSink();
    expect(await writeStreamed(jsonPieces(reply), sink)).toBe('sent');
    const parsed = frames.map(parseFrame);
    expect(parsed.length).toBeGreaterThan(3);
    for (const f of parsed)
      expect(Buffer.from(f.payload.toString('utf8'), 'utf8').equals(f.payload)).toBe(true);
    const expected = JSON.stringify({ ...reply, result: { messages, n: 1 } });
    expect(Buffer.concat(parsed.map((f) => f.payload)).toString('utf8')).toBe(expected);
  });

  it('a short value is one final text frame', async () => {
    const { sink, frames } = recordingSink();
    expect(await writeStreamed(jsonPieces({ a: 1 }), sink)).toBe('sent');
    expect(frames.map(parseFrame)).toEqual([{ fin: true, opcode: 1, payload: Buffer.from('{"a":1}') }]);
  });

  it('stops serializing once the connection is no longer open', async () => {
    const { sink, frames } = recordingSink({ closeAfter: 2 });
    expect(await writeStreamed(jsonPieces(history(5_000)), sink)).toBe('closed');
    expect(frames).toHaveLength(2);
    expect(frames.map(parseFrame).some((f) => f.fin)).toBe(false);
  });
});

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.server.close();
  harness = undefined;
});

describe('a streamed reply over a real WebSocket', () => {
  it('arrives as one message equal to the reply, with what was sent meanwhile after it, in order', async () => {
    harness = await startHarness({ limits: { maxBufferedBytes: 64 * 1024, closeGraceMs: 100 } });
    const client = await connect(
      harness.wsUrl,
      ticketProtocols(harness.tickets.mint('interactive', OWNER).ticket),
    );
    await client.call('ping', {});
    const order: string[] = [];
    client.ws.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString('utf8')) as { id?: number; method?: string };
      order.push(message.method ?? `reply ${message.id}`);
    });
    const items = 40_000;
    // Its first fragment is far over the stream's buffer: the loop is free before the second, and
    // the handler's three notifications are sent then, with the reply on its way.
    const big = client.call('test.many', { items, ticks: 3 });
    const reply = (await big) as { result: { items: Array<{ n: number; text: string }> } };
    expect(reply.result.items).toHaveLength(items);
    expect(reply.result.items[items - 1]).toEqual({ n: items - 1, text: `item ${items - 1} ✓ 😀` });
    await client.untilNotifications(3);
    expect(order).toEqual(['reply 2', 'test.tick', 'test.tick', 'test.tick']);
    expect((await client.call('ping', {})).result).toEqual({ pong: true });
    expect(harness.server.connections.size).toBe(1);
    client.close();
  });
});

describe('a serialized transcript in a reply is handed back to its maker (JsonText.release)', () => {
  /** A harness whose `test.text` answers a JsonText after `delayMs`, counting its releases. */
  async function withText(delayMs: number) {
    let released = 0;
    const logger = recordingLogger();
    const dispatcher = testDispatcher(logger);
    dispatcher.register('test.text', {
      params: z.strictObject({}),
      capability: null,
      handler: async () => {
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        return { messages: new JsonText(2, [Buffer.from('{"n":1},{"n":2}')], () => released++) };
      },
    });
    harness = await startHarness({ dispatcher, logger });
    const client = await connect(
      harness.wsUrl,
      ticketProtocols(harness.tickets.mint('interactive', OWNER).ticket),
    );
    return { client, released: () => released };
  }

  it('once written', async () => {
    const { client, released } = await withText(0);
    expect(((await client.call('test.text', {})) as { result: unknown }).result).toEqual({
      messages: [{ n: 1 }, { n: 2 }],
    });
    await vi.waitFor(() => expect(released()).toBe(1));
    client.close();
  });

  it('when the connection closed before it could be written', async () => {
    const { client, released } = await withText(100);
    void client.call('test.text', {}).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 20));
    client.close();
    await vi.waitFor(() => expect(released()).toBe(1));
  });
});
