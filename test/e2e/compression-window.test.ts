/**
 * Issue 26 item 1 through the real daemon: whatever the summariser answers — no text, a tool call,
 * an error, a timeout, a "summary" longer than what it replaces — no request the model receives is
 * over `model.context_window`. The oldest exchanges are dropped instead, a note says so, the
 * lineage records it, and a later summary is tried again. The demo model holds the window (it
 * refuses a larger request as a provider does) and counts every request it received.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DROPPED_NOTE, SUMMARY_MARKER } from '../../src/runtime/context/compress.js';
import { demoPromptTokens, type DemoSummaryAnswer } from '../../src/runtime/demo/model.js';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { isSummaryRequest } from '../../src/runtime/demo/summary.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild } from './cli.js';
import {
  BACKENDS,
  dropTestSchemas,
  nextEvent,
  resumeUntil,
  startDaemon,
  type Backend,
  type RunningDaemon,
  type SessionEvent,
} from './gateway-harness.js';
import { storeRows } from './store-rows.js';
import { createAttached, runTurn, tempDir, type Snapshot } from './seed-fixture.js';

beforeAll(requireBuild);
const WINDOW = 4000;
const closers: (() => Promise<unknown>)[] = [];
let backend: Backend = 'sqlite';
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await dropTestSchemas();
});

const MODEL_TIMEOUT_S = 20;
/** A turn whose summary call hangs waits out the model's timeout before it goes on. */
const TURN_WAIT_MS = MODEL_TIMEOUT_S * 1000 + 40_000;

const padding = 'lorem ipsum dolor sit amet '.repeat(30);

function config(demo: DemoModelServer): string {
  return [
    'model:',
    `  base_url: ${demo.baseUrl}`,
    '  model: gatehouse-demo',
    `  context_window: ${WINDOW}`,
    // Long enough for a turn's first byte on a loaded machine (beside a second gate run at load 26,
    // one turn's call outlived 10 s); a hung summary still fails by it, within TURN_WAIT_MS.
    `  timeout_s: ${MODEL_TIMEOUT_S}`,
    '  max_retries: 0',
    'compression:',
    '  threshold: 0.75',
    '  tail_tokens: 200',
  ].join('\n');
}

/** The largest request (turn or summary) the model received, in its own count. */
function largestRequest(demo: DemoModelServer): number {
  let largest = 0;
  for (const r of demo.requests)
    if (r.path === '/v1/chat/completions' && r.body)
      largest = Math.max(largest, demoPromptTokens(r.body, WINDOW));
  return largest;
}

function lastTurnRequest(demo: DemoModelServer): string[] {
  const bodies = demo.requests.filter((r) => r.path === '/v1/chat/completions' && r.body !== null);
  const last = bodies.filter((r) => !isSummaryRequest(r.body!.messages ?? [])).at(-1)!;
  return (last.body!.messages ?? []).map((m) => (typeof m.content === 'string' ? m.content : ''));
}

type Step = { kind: string; method?: string; dropped?: number; summary_error?: string };

async function lineageOf(daemon: RunningDaemon, session: string): Promise<Step[]> {
  const db = await storeRows(daemon, backend);
  try {
    const rows = await db.all<{ body: string }>('SELECT body FROM private_receipts');
    const receipt = rows
      .map((r) => JSON.parse(r.body) as { logical_id: string; lineage: Step[] })
      .find((r) => r.logical_id === session)!;
    return receipt.lineage;
  } finally {
    await db.close();
  }
}

function failureOf(client: GatewayClient, session: string): Promise<SessionEvent> {
  return nextEvent(client, 'session.compression_failed', (e) => e.session_id === session, 120_000);
}

/** Turns until the summariser has failed once, then as many again: each one completes. */
async function talkThroughFailure(
  client: GatewayClient,
  session: string,
  tag: string,
  failure = failureOf(client, session),
): Promise<SessionEvent> {
  let failed: SessionEvent | null = null;
  void failure.then((e) => (failed = e));
  let after = 0;
  for (let n = 1; after < 8 && n < 60; n++) {
    const done = await runTurn(client, session, `${tag}-${n}`, `message ${n}: ${padding}`, TURN_WAIT_MS);
    expect(done.event).toMatchObject({ outcome: 'completed' });
    if (failed !== null) after++;
  }
  expect(failed).not.toBeNull();
  return failed!;
}

const BAD: [DemoSummaryAnswer, string][] = [
  ['empty', 'the summary call answered with no text'],
  ['tool_call', 'the summary call answered with a tool call'],
  ['error', 'the summary call failed'],
  ['hang', 'the summary call failed'],
  ['long', 'the summary was longer than'],
];

describe.each(BACKENDS)('a conversation never outgrows its model on %s', (store) => {
  beforeAll(() => {
    backend = store;
  });

  it('drops the oldest exchanges whenever the summariser answers badly, and no request passes the window', async () => {
    const demo = await startDemoModel({ contextWindow: WINDOW });
    closers.push(() => demo.close());
    const daemon = await startDaemon({ store: backend, config: config(demo) });
    closers.push(() => daemon.stop());
    const client = await daemon.connect();
    for (const [answer, error] of BAD) {
      demo.answerSummaries(answer);
      const session = await createAttached(client, {
        request_id: `r-${answer}`,
        cwd: tempDir(),
        toolsets: [],
      });
      const failed = await talkThroughFailure(client, session, answer);
      expect(String(failed.event['error'])).toContain(error);
      expect(largestRequest(demo)).toBeLessThanOrEqual(WINDOW);
      const request = lastTurnRequest(demo);
      expect(request.some((c) => c.startsWith(`${SUMMARY_MARKER} ${DROPPED_NOTE}`))).toBe(true);
      expect(request.at(-1)).toContain('message ');

      // The lineage says what happened; a summary is tried again when asked and used when good.
      const steps = await lineageOf(daemon, session);
      expect(steps.length).toBeGreaterThan(0);
      expect(steps.every((s) => s.kind === 'compression' && s.method === 'dropped' && s.dropped! > 0)).toBe(
        true,
      );
      expect(steps[0]!.summary_error).toContain(error);
      demo.answerSummaries('summary');
      const result = await client.call<{ compressed: boolean }>('session.compress', { session_id: session });
      expect(result.compressed).toBe(true);
      expect((await lineageOf(daemon, session)).at(-1)).toMatchObject({ method: 'summary' });
    }
  }, 300_000);

  it('keeps to the window across a SIGKILL while the summary call hangs', async () => {
    const demo = await startDemoModel({ contextWindow: WINDOW, summaries: 'hang' });
    closers.push(() => demo.close());
    let daemon = await startDaemon({ store: backend, config: config(demo) });
    const first = daemon;
    closers.push(() => first.stop());
    let client = await daemon.connect();
    const session = await createAttached(client, { request_id: 'r-kill', cwd: tempDir(), toolsets: [] });
    // Turns until one asks for a summary: the daemon is killed while that request hangs.
    const summaryAsked = new Promise<void>((resolve) => {
      const check = () => {
        if (demo.requests.some((r) => r.body && isSummaryRequest(r.body.messages ?? []))) resolve();
        else void demo.waitForRequests(demo.requests.length + 1).then(check);
      };
      check();
    });
    let asked = false;
    void summaryAsked.then(() => (asked = true));
    let n = 0;
    while (!asked) {
      n++;
      const done = nextEvent(client, 'turn.complete', (e) => e.session_id === session, 60_000);
      done.catch(() => undefined); // the kill below closes the connection under the last one
      await client.call('prompt.submit', {
        session_id: session,
        submission_id: `k-${n}`,
        text: `message ${n}: ${padding}`,
      });
      await Promise.race([done, summaryAsked]);
    }
    await daemon.kill();

    daemon = await startDaemon({ home: daemon.home, store: backend, config: config(demo) });
    const second = daemon;
    closers.push(() => second.stop());
    client = await daemon.connect();
    await client.call('session.resume', { session_id: session });
    const failure = failureOf(client, session);
    await resumeUntil<Snapshot>(client, session, (s) => s.pending_admissions.length === 0, 60_000);
    await talkThroughFailure(client, session, 'after', failure);
    expect(largestRequest(demo)).toBeLessThanOrEqual(WINDOW);
    const steps = await lineageOf(daemon, session);
    expect(steps.length).toBeGreaterThan(0);
    expect(steps[0]).toMatchObject({ kind: 'compression', method: 'dropped' });
    expect(steps[0]!.summary_error).toContain('the summary call failed');
  }, 300_000);
});
