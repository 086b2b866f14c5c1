/**
 * Safe mode's cost (issue 15): a turn that runs one terminal command (`run: true`) in a safe_mode
 * session, whose tools run in the session's isolated worker (IPC to the worker, prlimit exec'd in
 * front of bash, a cgroup sweep after the call), against the same turn in a normal session, in the
 * same daemon and the same run, alternated so machine drift hits both alike:
 *
 * - warm: the session's worker is already running (every turn after the first);
 * - cold: the first turn of a fresh session, which for safe mode starts the worker (a Node process
 *   in its own network namespace and pids cgroup).
 */
import { performance } from 'node:perf_hooks';
import type { GatewayClient } from '../src/surfaces/client/rpc-client.js';
import {
  CompletionRouter,
  configFor,
  startBenchDaemon,
  startChildDemoModel,
  tempDir,
} from './gateway-daemon.js';
import { figure, percentile, type Bench, type BenchFigure } from './lib.js';

let submission = 0;

async function toolTurn(client: GatewayClient, router: CompletionRouter, sessionId: string): Promise<number> {
  const t = performance.now();
  const receipt = await client.call<{ admission_id: string }>('prompt.submit', {
    session_id: sessionId,
    submission_id: `s-${submission++}`,
    text: 'run: true',
  });
  await router.completion(receipt.admission_id);
  return performance.now() - t;
}

async function fresh(client: GatewayClient, cwd: string, safe: boolean): Promise<string> {
  const { session_id } = await client.call<{ session_id: string }>('session.create', {
    cwd,
    yolo: true,
    safe_mode: safe,
  });
  await client.call('session.resume', { session_id });
  return session_id;
}

const bench: Bench = {
  name: 'safe-mode',
  async run({ quick }) {
    const model = await startChildDemoModel();
    const daemon = await startBenchDaemon(configFor({ modelBaseUrl: model.baseUrl }));
    const figures: BenchFigure[] = [];
    try {
      const client = await daemon.connect();
      const router = new CompletionRouter(client);
      const cwd = tempDir('gh-bench-safe-');
      const warmN = quick ? 20 : 200;
      const coldN = quick ? 5 : 30;

      const normal = await fresh(client, cwd, false);
      const safe = await fresh(client, cwd, true);
      for (let i = 0; i < 5; i++) {
        await toolTurn(client, router, normal);
        await toolTurn(client, router, safe);
      }
      const warm = { normal: [] as number[], safe: [] as number[] };
      for (let i = 0; i < warmN; i++) {
        const order = i % 2 === 0 ? (['normal', 'safe'] as const) : (['safe', 'normal'] as const);
        for (const which of order)
          warm[which].push(await toolTurn(client, router, which === 'normal' ? normal : safe));
      }
      const cold = { normal: [] as number[], safe: [] as number[] };
      for (let i = 0; i < coldN; i++) {
        const order = i % 2 === 0 ? (['normal', 'safe'] as const) : (['safe', 'normal'] as const);
        for (const which of order) {
          const id = await fresh(client, cwd, which === 'safe');
          cold[which].push(await toolTurn(client, router, id));
        }
      }
      for (const list of [warm.normal, warm.safe, cold.normal, cold.safe]) list.sort((a, b) => a - b);
      figures.push(
        figure({
          bench: 'safe-mode',
          name: 'tool turn, worker running (p50)',
          value: percentile(warm.safe, 50),
          unit: 'ms',
          baseline: { name: 'same turn, normal session (p50)', value: percentile(warm.normal, 50) },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 1.5 },
          extra: {
            p99_safe_ms: percentile(warm.safe, 99),
            p99_normal_ms: percentile(warm.normal, 99),
            samples: warmN,
          },
        }),
        figure({
          bench: 'safe-mode',
          name: 'first tool turn, worker started (p50)',
          value: percentile(cold.safe, 50),
          unit: 'ms',
          baseline: { name: 'first turn, normal session (p50)', value: percentile(cold.normal, 50) },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 4 },
          extra: { samples: coldN },
        }),
      );
      await client.close();
    } finally {
      await daemon.close();
      await model.close();
    }
    return figures;
  },
};

export default bench;
