/**
 * Context compression (issue 11, SPEC LIN-1) through the real daemon: session.compress, the
 * threshold before a model call, and a provider's "context too long" answered by one compression
 * and one retry. The demo model runs in the test process with a context window, so every request
 * the model received can be read.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SUMMARY_MARKER } from '../../src/runtime/context/compress.js';
import { SUMMARY_REQUEST_MARKER } from '../../src/runtime/context/summary-prompt.js';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild } from './cli.js';
import {
  BACKENDS,
  dropTestSchemas,
  nextEvent,
  startDaemon,
  useSharedDaemon,
  type Backend,
  type RunningDaemon,
  type SessionEvent,
} from './gateway-harness.js';
import { storeRows } from './store-rows.js';
import { chatRequests, createAttached, runTurn, tempDir, type ChatBody } from './seed-fixture.js';

beforeAll(requireBuild);
const closers: (() => Promise<unknown>)[] = [];
/** The store of the daemons this file starts; each describe.each(BACKENDS) block sets it. */
let backend: Backend = 'sqlite';
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await dropTestSchemas();
});

/** The daemon's config: its model is `demo`, and `configWindow` is the window config.yaml says. */
function compressionConfig(demo: DemoModelServer, configWindow: number, tailTokens = 200): string {
  return [
    'model:',
    `  base_url: ${demo.baseUrl}`,
    '  model: gatehouse-demo',
    `  context_window: ${configWindow}`,
    'compression:',
    '  threshold: 0.75',
    `  tail_tokens: ${tailTokens}`,
  ].join('\n');
}

/** A daemon whose model is a demo model with `demoWindow`; `configWindow` is what config.yaml says. */
async function setUp(options: { demoWindow: number; configWindow: number; tailTokens?: number }) {
  const demo = await startDemoModel({ contextWindow: options.demoWindow });
  closers.push(() => demo.close());
  const config = compressionConfig(demo, options.configWindow, options.tailTokens);
  const daemon = await startDaemon({ store: backend, config });
  closers.push(() => daemon.stop());
  const client = await daemon.connect();
  const session = await createAttached(client, { request_id: 'r-1', cwd: tempDir(), toolsets: [] });
  return { demo, daemon, client, session };
}

const padding = 'lorem ipsum dolor sit amet '.repeat(30);

function isSummaryCall(body: ChatBody): boolean {
  return (
    typeof body.messages[0]?.content === 'string' &&
    body.messages[0].content.startsWith(SUMMARY_REQUEST_MARKER)
  );
}

function turnRequests(demo: DemoModelServer): ChatBody[] {
  return chatRequests(demo).filter((b) => !isSummaryCall(b));
}

function contents(body: ChatBody): string[] {
  return body.messages.map((m) => (typeof m.content === 'string' ? m.content : ''));
}

/** The receipt of `session` and the transcripts of its lineage (itself and its children). */
async function readStore(daemon: RunningDaemon, session: string) {
  const db = await storeRows(daemon, backend);
  try {
    const receipts = await db.all<{ body: string }>(
      'SELECT body FROM private_receipts WHERE key = ?',
      `gateway.local_policy.v1:${session}`,
    );
    const sessions = await db.all<{
      session_id: string;
      parent_session_id: string | null;
      closed_reason: string | null;
    }>(
      'SELECT session_id, parent_session_id, closed_reason FROM sessions WHERE session_id = ? OR parent_session_id = ? ORDER BY created_at',
      session,
      session,
    );
    expect(receipts).toHaveLength(1);
    return { receipt: JSON.parse(receipts[0]!.body) as Record<string, unknown>, sessions };
  } finally {
    await db.close();
  }
}

async function turns(
  client: GatewayClient,
  session: string,
  from: number,
  to: number,
): Promise<SessionEvent[]> {
  const done: SessionEvent[] = [];
  for (let n = from; n <= to; n++)
    done.push(await runTurn(client, session, `s-${n}`, `message ${n}: ${padding}`));
  return done;
}

describe.each(BACKENDS)('compression on %s', (store) => {
  beforeAll(() => {
    backend = store;
  });

  describe('session.compress through the real daemon (one daemon, a session each)', () => {
    let demo: DemoModelServer | null = null;
    afterAll(() => demo?.close());
    const daemon = useSharedDaemon(async () => {
      demo = await startDemoModel({ contextWindow: 100_000 });
      return startDaemon({ store, config: compressionConfig(demo, 100_000) });
    });
    /** A session of the case's own on the shared daemon, attached to a client of its own. */
    async function attached(request_id: string) {
      const d = await daemon();
      const client = await d.connect();
      const session = await createAttached(client, { request_id, cwd: tempDir(), toolsets: [] });
      return { demo: demo!, daemon: d, client, session };
    }

    it('a session too short to compress says so and changes nothing', async () => {
      const { client, session } = await attached('r-short');
      await turns(client, session, 1, 1);
      const result = await client.call<Record<string, unknown>>('session.compress', { session_id: session });
      expect(result).toMatchObject({ compressed: false });
      expect(String(result['why'])).toContain('head and recent tail');
    });

    it('publishes a child transcript with head, summary and tail; the next request shows them; lineage and parent are kept', async () => {
      const { demo, daemon, client, session } = await attached('r-compress');
      await turns(client, session, 1, 4);
      const compressed = nextEvent(client, 'session.compressed');
      const result = await client.call<Record<string, unknown>>('session.compress', { session_id: session });
      expect(result).toMatchObject({ session_id: session, compressed: true });
      const event = (await compressed).event;
      expect(event).toMatchObject({ reason: 'manual', messages_before: 8 });
      expect(Number(event['tokens_after'])).toBeLessThan(Number(event['tokens_before']));

      await runTurn(client, session, 's-5', 'message 5: what now?');
      const last = contents(turnRequests(demo).at(-1)!);
      expect(last[1]).toContain('message 1:'); // head: the first exchange, verbatim
      const summary = last.find((c) => c.startsWith(SUMMARY_MARKER))!;
      expect(summary).toContain('## Goal');
      expect(summary).toContain('user asked: message 2:');
      expect(summary).toContain('user asked: message 3:');
      expect(last.some((c) => c.startsWith('message 2:'))).toBe(false);
      expect(last.slice(-3, -2)[0]).toContain('message 4:'); // the tail before this turn, verbatim
      expect(last.at(-1)).toBe('message 5: what now?');

      // The parent transcript stays searchable; the logical id is unchanged.
      const hits = await client.call<{ hits: unknown[] }>('session.search', { query: 'message' });
      expect(JSON.stringify(hits)).toContain(session);
      // The last case of this block: the shared daemon stops before its store is read.
      await daemon.stop();
      const { receipt, sessions } = await readStore(daemon, session);
      const lineage = receipt['lineage'] as { kind: string; from: string; to: string }[];
      expect(lineage).toHaveLength(1);
      expect(lineage[0]).toMatchObject({ kind: 'compression', from: session });
      expect(receipt['current_session_id']).toBe(lineage[0]!.to);
      expect(receipt['logical_id']).toBe(session);
      expect(sessions).toEqual([
        { session_id: session, parent_session_id: null, closed_reason: 'compression' },
        { session_id: lineage[0]!.to, parent_session_id: session, closed_reason: null },
      ]);
    });
  });

  describe('compression inside a turn', () => {
    it('compresses before a model call that would pass the threshold, and the request shows summary + tail', async () => {
      const { demo, client, session } = await setUp({ demoWindow: 4096, configWindow: 4096 });
      const compressed = nextEvent(client, 'session.compressed');
      let n = 0;
      let event: SessionEvent | null = null;
      void compressed.then((e) => (event = e));
      while (event === null && n < 30) {
        n++;
        const done = await runTurn(client, session, `s-${n}`, `message ${n}: ${padding}`);
        expect(done.event).toMatchObject({ outcome: 'completed' });
      }
      expect(event!.event).toMatchObject({ reason: 'threshold' });
      const request = contents(turnRequests(demo).at(-1)!);
      expect(request.some((c) => c.startsWith(SUMMARY_MARKER))).toBe(true);
      expect(request.at(-1)).toBe(`message ${n}: ${padding}`);
    });

    it('a provider overflow is compressed once and the call retried once', async () => {
      // The config claims a large window, so the threshold never fires: the provider's 400 does.
      const { demo, client, session } = await setUp({ demoWindow: 4096, configWindow: 1_000_000 });
      let n = 0;
      let compressed: SessionEvent | null = null;
      void nextEvent(client, 'session.compressed').then((e) => (compressed = e));
      while (compressed === null && n < 30) {
        n++;
        const done = await runTurn(client, session, `s-${n}`, `message ${n}: ${padding}`);
        expect(done.event).toMatchObject({ outcome: 'completed' });
      }
      expect(compressed!.event).toMatchObject({ reason: 'overflow' });
      const statuses = demo.requests.filter((r) => r.path === '/v1/chat/completions');
      expect(statuses.length).toBeGreaterThan(n + 1); // the refused call, the summary, the retry
    });

    it('fails with a clear context_overflow when even a compressed conversation does not fit', async () => {
      const { client, session } = await setUp({ demoWindow: 1024, configWindow: 1_000_000 });
      const done = await runTurn(client, session, 's-1', `message: ${'lorem ipsum '.repeat(800)}`);
      expect(done.event).toMatchObject({ outcome: 'failed', error: { reason: 'context_overflow' } });
      const message = String((done.event['error'] as { message: string }).message);
      expect(message).toContain('could not compress the conversation');
      expect(message).toContain('/new');
      expect(message).not.toMatch(/compress this one/);
    });
  });
});
