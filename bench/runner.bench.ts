/**
 * Runner overhead: one text turn through runTurn (events, persistence into an in-memory sink) versus
 * a direct call of the same demo model through the same client, over loopback HTTP at zero latency.
 * The two are measured alternately in the same run so machine drift hits both alike.
 */
import { performance } from 'node:perf_hooks';
import type { TranscriptMessage } from '../src/domain/vocabulary.js';
import { startDemoModel } from '../src/runtime/demo/server.js';
import { ModelClient } from '../src/runtime/model/client.js';
import { runTurn } from '../src/runtime/runner.js';
import type { PromptHost, TranscriptSink } from '../src/runtime/types.js';
import { figure, percentile, type Bench } from './lib.js';

const SYSTEM = 'You are a benchmark.';
const INPUT = 'measure the overhead of one turn through the runner please';

class MemorySink implements TranscriptSink {
  messages: TranscriptMessage[] = [];
  append(_sessionId: string, messages: TranscriptMessage[]): void {
    this.messages.push(...messages);
  }
}

const noPrompts: PromptHost = {
  requestApproval: () => Promise.resolve({ kind: 'denied' }),
  askClarify: () => Promise.resolve({ kind: 'skipped' }),
};

const bench: Bench = {
  name: 'runner',
  async run({ quick }) {
    const demo = await startDemoModel({ latencyMs: 0 });
    const client = new ModelClient({ baseUrl: demo.baseUrl, model: 'gatehouse-demo' });
    const n = quick ? 200 : 1000;
    const warmup = 50;

    const direct = async () => {
      let text = '';
      await client.complete({
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: INPUT },
        ],
        headers: { 'x-gatehouse-admission': 'bench' },
        onDelta: (d) => {
          text += d.text;
        },
      });
      return text;
    };
    const throughRunner = async () => {
      const sink = new MemorySink();
      let events = 0;
      await runTurn({
        sessionId: 'bench',
        admissionId: 'bench',
        executionGeneration: 1,
        model: client,
        systemPrompt: SYSTEM,
        tools: [],
        cwd: process.cwd(),
        yolo: false,
        maxTurns: 4,
        history: [],
        input: { role: 'user', content: INPUT },
        transcript: sink,
        prompts: noPrompts,
        signal: new AbortController().signal,
        emit: () => {
          events++;
        },
      });
      return events;
    };

    const directMs: number[] = [];
    const runnerMs: number[] = [];
    try {
      for (let i = 0; i < warmup; i++) {
        await direct();
        await throughRunner();
      }
      for (let i = 0; i < n; i++) {
        // Alternate which goes first so neither always follows the other's garbage.
        const order = i % 2 === 0 ? [direct, throughRunner] : [throughRunner, direct];
        for (const fn of order) {
          const t = performance.now();
          await fn();
          (fn === direct ? directMs : runnerMs).push(performance.now() - t);
        }
      }
    } finally {
      await demo.close();
    }
    directMs.sort((a, b) => a - b);
    runnerMs.sort((a, b) => a - b);
    const d50 = percentile(directMs, 50);
    const d99 = percentile(directMs, 99);
    const r50 = percentile(runnerMs, 50);
    const r99 = percentile(runnerMs, 99);
    return [
      figure({
        bench: 'runner',
        name: 'turn via runTurn p50',
        value: r50,
        unit: 'ms',
        baseline: { name: 'direct client call p50', value: d50 },
        higherIsBetter: false,
        aim: { op: '<=', ratio: 1.3 },
        extra: { samples: n },
      }),
      figure({
        bench: 'runner',
        name: 'turn via runTurn p99',
        value: r99,
        unit: 'ms',
        baseline: { name: 'direct client call p99', value: d99 },
        higherIsBetter: false,
        aim: { op: '<=', ratio: 2 },
        extra: { samples: n },
      }),
    ];
  },
};

export default bench;
