/**
 * Issue 29, traces: the real daemon, configured with the `telemetry` section exactly as
 * docs/observability.md shows it (its endpoint pointed at a receiver in this process), sends the
 * OTLP spans of its turns: a turn with a tool and an approval answered over WebSocket, with the
 * spans' parents and GenAI attributes, and no message content unless capture_content; and a turn
 * SIGKILLed mid-turn and resumed after the restart, whose new run and recovery link to the trace of
 * the run the crash interrupted.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runIds } from '../../src/daemon/services/tracing.js';
import { nextEvent } from './gateway-harness.js';
import { OtlpReceiver, type ReceivedSpan } from './otlp-receiver.js';
import {
  died,
  modelConfig,
  quiet,
  tempDir,
  useRecoveryRig,
  type Ack,
  type Snapshot,
} from './recovery-harness.js';

const rig = useRecoveryRig();
let receiver: OtlpReceiver;
beforeEach(async () => {
  receiver = await OtlpReceiver.start();
});
afterEach(() => receiver.close());

const AUTH = 'Bearer collector-key-for-tests';
const ENV = { GATEHOUSE_OTLP_AUTH: AUTH };

/** The `telemetry` block of docs/observability.md, with the receiver's address in place of the example's. */
function documentedTelemetry(captureContent = false): string {
  const doc = readFileSync(new URL('../../docs/observability.md', import.meta.url), 'utf8');
  const block = /<!-- telemetry-config -->\n```yaml\n([\s\S]*?)```\n<!-- \/telemetry-config -->/.exec(doc);
  expect(block).not.toBeNull();
  const yaml = block![1]!;
  expect(yaml).toContain('otlp_endpoint: http://127.0.0.1:4318\n');
  expect(yaml).toContain('capture_content: false\n');
  return yaml
    .replace('http://127.0.0.1:4318', receiver.url)
    .replace('capture_content: false', `capture_content: ${captureContent}`);
}

const named = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan) =>
  spans.filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId);
/** The root span of run `run` of turn `turnId`, once it and its settlement arrived. */
const settledRun = (turnId: string, run: number) => (spans: ReceivedSpan[]) => {
  const root = spans.find(
    (s) =>
      s.name === 'gatehouse.turn' &&
      s.attributes['gatehouse.turn.id'] === turnId &&
      s.attributes['gatehouse.turn.run'] === run,
  );
  return root && named(childrenOf(spans, root), 'gatehouse.settle').length === 1 ? root : undefined;
};

const CONTENT_KEYS = [
  'gen_ai.input.messages',
  'gen_ai.output.messages',
  'gen_ai.tool.call.arguments',
  'gen_ai.tool.call.result',
  'gatehouse.approval.command',
  'gatehouse.approval.reason',
  'gatehouse.turn.final_text',
];

describe('issue 29: turn traces over OTLP/HTTP', () => {
  it.each([false, true])(
    'a turn with a tool and an approval answered over WebSocket (capture_content: %s)',
    async (capture) => {
      const demo = await rig.model();
      const d = await rig.daemon({ config: modelConfig(demo, documentedTelemetry(capture)), env: ENV });
      const client = await d.connect();
      const { session_id } = await client.call<Snapshot>('session.create', { cwd: tempDir(), yolo: false });
      await client.call('session.resume', { session_id });
      const marker = `trace-marker-${capture}-${process.pid}`;
      const asked = nextEvent(client, 'approval.request');
      const ack = await client.call<Ack>('prompt.submit', {
        session_id,
        submission_id: 'one',
        text: `run: setsid -w echo ${marker}`,
      });
      const request = (await asked).event;
      const done = nextEvent(client, 'turn.complete');
      await client.call('approval.respond', {
        session_id,
        prompt_id: request['prompt_id'],
        execution_generation: request['execution_generation'],
        choice: 'once',
      });
      expect((await done).event).toMatchObject({ outcome: 'completed' });

      const root = await receiver.until(settledRun(ack.admission_id, 0));
      const spans = receiver.spans.filter((s) => s.traceId === root.traceId);
      expect(root.parentSpanId).toBe('');
      expect(root.attributes).toMatchObject({
        'gatehouse.engine': 'local',
        'gatehouse.session.id': session_id,
        'gen_ai.conversation.id': session_id,
        'gatehouse.turn.outcome': 'completed',
        'gatehouse.turn.resumed': false,
      });
      expect(root.resource).toMatchObject({ 'service.name': 'gatehouse' });
      // The request carried the header whose value the documented variable holds.
      expect(receiver.headers.every((h) => h.authorization === AUTH)).toBe(true);

      const children = childrenOf(spans, root);
      expect(children.map((s) => s.name).sort()).toEqual(
        [
          'chat gatehouse-demo',
          'chat gatehouse-demo',
          'execute_tool terminal',
          'gatehouse.admission',
          'gatehouse.claim',
          'gatehouse.settle',
        ].sort(),
      );
      const calls = named(children, 'chat gatehouse-demo');
      for (const call of calls) {
        expect(call.kind).toBe(3); // CLIENT
        expect(call.attributes).toMatchObject({
          'gen_ai.operation.name': 'chat',
          // The top-level `model` section is the provider named `default`.
          'gen_ai.provider.name': 'default',
          'gen_ai.request.model': 'gatehouse-demo',
        });
        expect(call.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
        expect(call.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
      }
      expect(calls.map((c) => c.attributes['gen_ai.response.finish_reasons'])).toEqual(
        expect.arrayContaining([['tool_calls'], ['stop']]),
      );

      const [tool] = named(children, 'execute_tool terminal');
      expect(tool!.attributes).toMatchObject({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'terminal',
        'gatehouse.tool.is_error': false,
      });
      const [approval] = childrenOf(spans, tool!);
      expect(approval!.name).toBe('gatehouse.approval');
      expect(approval!.attributes).toMatchObject({
        'gatehouse.prompt.id': request['prompt_id'],
        'gatehouse.prompt.outcome': 'approved',
        'gatehouse.approval.choice': 'once',
        'gatehouse.prompt.answered_by': 'human',
      });
      expect(approval!.attributes['enduser.id']).toMatch(/.@./);

      const everything = receiver.bodies.join('\n');
      if (capture) {
        expect(tool!.attributes['gen_ai.tool.call.arguments']).toContain(marker);
        expect(approval!.attributes['gatehouse.approval.command']).toBe(`setsid -w echo ${marker}`);
        expect(String(calls[0]!.attributes['gen_ai.input.messages'])).toContain(marker);
      } else {
        // No message text anywhere in what left the daemon.
        expect(everything).not.toContain(marker);
        for (const span of spans)
          for (const key of CONTENT_KEYS) expect(span.attributes).not.toHaveProperty(key);
      }
    },
  );

  it('a turn SIGKILLed mid-turn: its resumed run and its recovery link to the interrupted run', async () => {
    const demo = await rig.model();
    const config = modelConfig(demo, documentedTelemetry(true));
    const first = await rig.daemon({ config, env: { ...ENV, GATEHOUSE_TEST_FAULTS: 'tool.recorded' } });
    const client = await first.connect();
    const cwd = tempDir();
    const { session_id } = await client.call<Snapshot>('session.create', { cwd, yolo: true });
    await client.call('session.resume', { session_id });
    const marker = `resumed-marker-${process.pid}`;
    const ack = await client.call<Ack>('prompt.submit', {
      session_id,
      submission_id: 'one',
      text: `run: echo ${marker} >> ran.log`,
    });
    // The tool call is stored, its process not started: the daemon SIGKILLs itself there.
    await died(first);

    const second = await rig.daemon({ home: first.home, config, env: ENV });
    const again = await second.connect();
    expect((await quiet(again, session_id)).pending_admissions).toEqual([]);

    const interrupted = runIds({ turnId: ack.admission_id, run: 0 });
    const root = await receiver.until(settledRun(ack.admission_id, 1));
    // The resumed run: a trace of its own whose root links to the interrupted run's root.
    expect(root).toMatchObject(runIds({ turnId: ack.admission_id, run: 1 }));
    expect(root.parentSpanId).toBe('');
    expect(root.attributes).toMatchObject({
      'gatehouse.turn.resumed': true,
      'gatehouse.turn.outcome': 'completed',
    });
    expect(root.links).toEqual([
      {
        ...interrupted,
        attributes: {
          'gatehouse.link': 'resumes',
          'gatehouse.turn.id': ack.admission_id,
          'gatehouse.turn.run': 0,
        },
      },
    ]);
    const spans = receiver.spans.filter((s) => s.traceId === root.traceId);
    const children = childrenOf(spans, root);
    expect(named(children, 'gatehouse.resume')[0]!.attributes).toMatchObject({
      'gatehouse.resume.step': 'tool',
      'gatehouse.turn.resumes': 1,
    });
    // A resumed run has no admission wait: it was claimed by recovery.
    expect(named(children, 'gatehouse.admission')).toEqual([]);
    const [tool] = named(children, 'execute_tool terminal');
    expect(tool!.attributes['gen_ai.tool.call.arguments']).toContain(marker);
    expect(named(children, 'chat gatehouse-demo')).toHaveLength(1);

    // Recovery's decision: a span of its own, linked to the interrupted run.
    const [recovery] = named(receiver.spans, 'gatehouse.recovery');
    expect(recovery!.parentSpanId).toBe('');
    expect(recovery!.attributes).toMatchObject({
      'gatehouse.engine': 'local',
      'gatehouse.admission.id': ack.admission_id,
      'gatehouse.recovery.result': 'resumed',
      'gatehouse.turn.run': 1,
    });
    expect(recovery!.links.map((l) => ({ traceId: l.traceId, spanId: l.spanId }))).toEqual([interrupted]);

    // Whatever of the interrupted run reached the receiver before the kill is in its own trace.
    for (const span of receiver.spans.filter((s) => s.traceId === interrupted.traceId))
      expect(span.attributes['gatehouse.turn.run'] ?? 0).toBe(0);
  });

  it('a collector that never answers neither holds a turn nor the stop', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      const demo = await rig.model();
      const d = await rig.daemon({
        config: modelConfig(demo, `telemetry:\n  otlp_endpoint: ${url}`),
      });
      const client = await d.connect();
      const { session_id } = await client.call<Snapshot>('session.create', { cwd: tempDir(), yolo: true });
      await client.call('session.resume', { session_id });
      for (const id of ['one', 'two']) {
        const done = nextEvent(client, 'turn.complete');
        await client.call('prompt.submit', { session_id, submission_id: id, text: 'run: echo hi' });
        expect((await done).event).toMatchObject({ outcome: 'completed' });
      }
      // The stop flushes with a bounded wait, then gives the spans up: it ends, and cleanly.
      await expect(d.stop()).resolves.toBe(0);
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
