/**
 * Issue 26 item 8: `limits.max_concurrent_turns` is one limit for every turn, local and
 * chat-platform alike, through the real daemon. With a limit of 1 and a turn of either kind held at
 * the demo model, a turn of the other kind waits (runtime.describe counts it under
 * `gateway.turns.waiting`) and never reaches the model until the first has ended.
 */
import { describe, expect, it } from 'vitest';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { nextEvent } from './gateway-harness.js';
import { createAttached, tempDir } from './seed-fixture.js';
import { useTelegramDaemon } from './telegram-fixture.js';

const tg = useTelegramDaemon({ yaml: ['limits:', '  max_concurrent_turns: 1'] });
const chat = { id: 901, type: 'private' as const };
const from = { id: 901, first_name: 'Limited' };

type Turns = { running: number; waiting: number; limit: number };

/**
 * Resolves once runtime.describe counts `waiting` turns waiting for a place, or as soon as the model
 * has more than `requests` requests (a turn that should have waited ran instead).
 */
async function turnsWaiting(client: GatewayClient, waiting: number, requests: number): Promise<Turns> {
  for (;;) {
    const { gateway } = await client.call<{ gateway: { turns?: Turns } }>('runtime.describe', {});
    expect(gateway.turns).toBeDefined();
    if (gateway.turns!.waiting === waiting || tg.model.requests.length > requests) return gateway.turns!;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** No two of these model requests were open at the same moment. */
function neverOverlapped(requests: { received_at: number; finished_at: number | null }[]): boolean {
  const sorted = [...requests].sort((a, b) => a.received_at - b.received_at);
  return sorted.every((r, i) => i === 0 || sorted[i - 1]!.finished_at! <= r.received_at);
}

describe('limits.max_concurrent_turns counts local and chat-platform turns together', () => {
  it('a chat turn waits for a local one, and a local turn for a chat one', async () => {
    const daemon = await tg.start();
    const client = await daemon.connect();
    const { model, standIn } = tg;
    const session_id = await createAttached(client, { cwd: tempDir() });

    // A local turn holds the only place; the chat's turn waits for it.
    let seen = model.requests.length;
    model.hold();
    const localDone = nextEvent(client, 'turn.complete', (e) => e.session_id === session_id);
    await client.call('prompt.submit', { session_id, submission_id: 'l1', text: 'local first' });
    await model.waitForRequests(seen + 1);
    standIn.inject({ chat, from, text: 'chat second' });
    expect(await turnsWaiting(client, 1, seen + 1)).toEqual({ running: 1, waiting: 1, limit: 1 });
    expect(model.requests.length).toBe(seen + 1);
    model.release();
    expect(await tg.waitForText(chat.id, /chat second/)).toBe(`${DEMO_LABEL}: you said: chat second`);
    expect((await localDone).event).toMatchObject({ outcome: 'completed' });
    expect(neverOverlapped(model.requests.slice(seen))).toBe(true);

    // And the other way round: a chat turn holds it; the local turn waits.
    seen = model.requests.length;
    model.hold();
    standIn.inject({ chat, from, text: 'chat first' });
    await model.waitForRequests(seen + 1);
    const localAfter = nextEvent(client, 'turn.complete', (e) => e.session_id === session_id);
    await client.call('prompt.submit', { session_id, submission_id: 'l2', text: 'local second' });
    expect(await turnsWaiting(client, 1, seen + 1)).toEqual({ running: 1, waiting: 1, limit: 1 });
    expect(model.requests.length).toBe(seen + 1);
    model.release();
    expect((await localAfter).event).toMatchObject({ outcome: 'completed' });
    expect(await tg.waitForText(chat.id, /chat first/)).toBe(`${DEMO_LABEL}: you said: chat first`);
    expect(neverOverlapped(model.requests.slice(seen))).toBe(true);
    expect(await turnsWaiting(client, 0, model.requests.length)).toEqual({
      running: 0,
      waiting: 0,
      limit: 1,
    });
  }, 120_000);
});
