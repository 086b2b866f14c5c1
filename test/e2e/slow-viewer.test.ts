/**
 * LOC-11 through the real daemon (issue 32 aim 5): a viewer that stops reading is cut by the
 * connection's byte bound, and another viewer of the same session goes on receiving every event of
 * every turn, in order. The events reach both through the write round (one shared frame per event).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { requestTicket } from '../../src/surfaces/control/client.js';
import { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild } from './cli.js';
import {
  nextEvent,
  sessionEvent,
  startDaemon,
  type RunningDaemon,
  type SessionEvent,
} from './gateway-harness.js';

beforeAll(requireBuild);

let daemon: RunningDaemon | undefined;
afterEach(async () => {
  await daemon?.stop();
  daemon = undefined;
});

/** Viewers attached to sessions now (the daemon's `gatehouse_viewers` gauge). */
async function attachedViewers(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = /^gatehouse_viewers (\d+)$/m.exec(text);
  if (!line) throw new Error(`no gatehouse_viewers in /metrics:\n${text.slice(0, 500)}`);
  return Number(line[1]);
}

/** A viewer whose socket the test can stop reading. */
async function pausableViewer(d: RunningDaemon): Promise<{ client: GatewayClient; ws: WebSocket }> {
  const { ticket } = await requestTicket(d.layout.controlSocket, 'interactive');
  const ws = new WebSocket(`${d.url.replace(/^http/, 'ws')}/api/ws`, [
    'gatehouse.v1',
    `gatehouse-ticket.${ticket}`,
  ]);
  return { client: await GatewayClient.open(ws), ws };
}

describe('LOC-11 a viewer that stops reading, through the daemon', () => {
  it('is cut by the byte bound while another viewer gets every event of every turn', async () => {
    daemon = await startDaemon({ config: 'metrics:\n  enabled: true\n' });
    const reader = await daemon.connect();
    const slow = await pausableViewer(daemon);
    const { session_id } = await reader.call<{ session_id: string }>('session.create', {
      cwd: mkdtempSync(join(tmpdir(), 'gh-work-')),
    });
    await reader.call('session.resume', { session_id });
    await slow.client.call('session.resume', { session_id });
    const seen: SessionEvent[] = [];
    reader.onNotification((n) => {
      const e = sessionEvent(n);
      if (e) seen.push(e);
    });
    let slowEvents = 0;
    slow.client.onNotification((n) => (slowEvents += sessionEvent(n) ? 1 : 0));
    const slowClosed = new Promise<void>((resolve) => slow.client.onClose(() => resolve()));
    expect(await attachedViewers(daemon.url)).toBe(2);
    slow.ws.pause();

    // The demo model echoes the prompt: each turn shows a viewer a few MB (the question and the
    // answer, streamed and stored), past the 4 MiB bound and the kernel's socket
    // buffers within a few turns.
    const text = 'x'.repeat(1_000_000);
    let turns = 0;
    // The hub lets go of a viewer the moment its connection refuses an event for the bound.
    while ((await attachedViewers(daemon.url)) === 2) {
      expect(turns).toBeLessThan(12);
      turns += 1;
      const done = nextEvent(reader, 'turn.complete', (e) => e.session_id === session_id, 60_000);
      await reader.call('prompt.submit', { session_id, submission_id: `big-${turns}`, text });
      await done;
    }
    // One more turn after the cut: the session and the reading viewer go on.
    const settled = nextEvent(reader, 'admission.settled', (e) => e.session_id === session_id, 60_000);
    await reader.call('prompt.submit', { session_id, submission_id: 'after', text: 'after the cut' });
    await settled;

    expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: seen.length }, (_, i) => i + 1));
    for (const type of ['turn.start', 'message.stored', 'turn.complete', 'admission.settled'])
      expect(
        seen.filter((e) => e.event.type === type),
        type,
      ).toHaveLength(turns + 1);

    // Reading again, the cut viewer finds its connection closed, short of what the reader got.
    slow.ws.resume();
    await slowClosed;
    expect(slowEvents).toBeLessThan(seen.length);
    expect(await attachedViewers(daemon.url)).toBe(1);
  }, 180_000);
});
