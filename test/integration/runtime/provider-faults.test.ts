import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEMO_LABEL } from '../../../src/runtime/demo/script.js';
import { ModelClient } from '../../../src/runtime/model/client.js';
import {
  startFakeProvider,
  textAnswer,
  toolCallAnswer,
  transcriptProblems,
} from '../../unit/runtime/helpers.js';
import { startRig, startTurn, type Rig } from './harness.js';

let rig: Rig;
let closers: (() => Promise<void>)[] = [];
beforeEach(async () => {
  rig = await startRig();
});
afterEach(async () => {
  await Promise.all(closers.map((c) => c()));
  closers = [];
  await rig.cleanup();
});

/**
 * A provider in front of the demo model: `fail(n)` decides, for the n-th request (1-based), whether
 * to answer with an error status instead of forwarding. Counts what it received.
 */
async function frontOf(
  target: string,
  fail: (n: number) => { status: number; message: string } | null,
): Promise<{ baseUrl: string; received: () => number }> {
  let received = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const failure = fail(++received);
      if (failure) {
        res.writeHead(failure.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: failure.message } }));
        return;
      }
      void fetch(`${target}${req.url ?? ''}`, {
        method: req.method ?? 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.concat(chunks),
      }).then(async (upstream) => {
        res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? '' });
        res.end(Buffer.from(await upstream.arrayBuffer()));
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  });
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    received: () => received,
  };
}

describe('RUN-1 provider failures inside a real turn', () => {
  it('a 500 then success: retried once, one answer streamed and stored', async () => {
    const front = await frontOf(rig.demo.url, (n) =>
      n === 1 ? { status: 500, message: 'upstream hiccup' } : null,
    );
    const model = new ModelClient({
      baseUrl: front.baseUrl,
      model: 'gatehouse-demo',
      retry: { baseDelayMs: 1 },
    });
    const turn = startTurn(rig, 'hello again', { model });
    const result = await turn.done;
    const expected = `${DEMO_LABEL}: you said: hello again`;
    expect(result).toMatchObject({ outcome: 'completed', final_text: expected });
    expect(front.received()).toBe(2);
    expect(rig.demo.requests).toHaveLength(1);
    const deltas = turn.events.filter((e) => e.type === 'text.delta').map((e) => e.text);
    expect(deltas.join('')).toBe(expected); // shown once, not twice
    const stored = await rig.store.loadTranscript(rig.sessionId);
    expect(stored.map((m) => [m.role, m.content])).toEqual([
      ['user', 'hello again'],
      ['assistant', expected],
    ]);
  });

  it('a 401: failed with an auth error naming the fix, sent once, key not echoed', async () => {
    const apiKey = 'sk-test-integration-401-abcdef';
    const front = await frontOf(rig.demo.url, () => ({
      status: 401,
      message: `Incorrect API key provided: ${apiKey}`,
    }));
    const model = new ModelClient({ baseUrl: front.baseUrl, apiKey, model: 'x', retry: { baseDelayMs: 1 } });
    const result = await startTurn(rig, 'hello', { model }).done;
    expect(result.outcome).toBe('failed');
    expect(result.error?.reason).toBe('auth');
    expect(result.error?.message).toMatch(/rejected the credentials \(HTTP 401\).*api_key/);
    expect(result.error?.message).not.toContain(apiKey);
    expect(front.received()).toBe(1);
    const stored = await rig.store.loadTranscript(rig.sessionId);
    expect(stored.map((m) => m.role)).toEqual(['user']);
  });

  it('malformed tool arguments: the real terminal tool never runs, the error goes back to the model', async () => {
    const marker = path.join(rig.cwd, 'ran');
    const provider = await startFakeProvider([
      toolCallAnswer([{ id: 'call_bad', name: 'terminal', arguments: `{"command": "touch ${marker}` }]),
      textAnswer('I will fix my arguments.'),
    ]);
    closers.push(() => provider.close());
    const model = new ModelClient({ baseUrl: provider.baseUrl, model: 'fake', retry: { baseDelayMs: 1 } });
    const turn = startTurn(rig, 'make a file', { model });
    const result = await turn.done;
    expect(result).toMatchObject({ outcome: 'completed', final_text: 'I will fix my arguments.' });
    expect(fs.existsSync(marker)).toBe(false);
    const fedBack = provider.requests[1]!.body.messages.at(-1)!;
    expect(fedBack).toMatchObject({ role: 'tool', tool_call_id: 'call_bad' });
    expect(fedBack.content).toMatch(/not valid JSON/);
    const stored = await rig.store.loadTranscript(rig.sessionId);
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(stored[2]!.content).toBe(fedBack.content);
    expect(transcriptProblems(stored)).toEqual([]);
  });
});
