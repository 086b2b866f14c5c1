/**
 * The cost of a checkpoint: a terminal tool call on a working tree of 1,000 files with the
 * checkpoint guard around it (the tree changed since the last checkpoint, so a new one is saved),
 * and the same when nothing changed (the newest checkpoint stands for it), each against a plain
 * terminal call of the same command, measured alternately in the same run.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CHECKPOINT_DEFAULTS, CheckpointStore } from '../src/runtime/checkpoints/store.js';
import { checkpointGuard } from '../src/runtime/lifecycle/checkpoint-guard.js';
import { guardTools } from '../src/runtime/tool-guards.js';
import { createTerminalTool } from '../src/runtime/tools/terminal.js';
import type { ToolContext } from '../src/runtime/types.js';
import { figure, percentile, type Bench } from './lib.js';

const FILES = 1000;

const bench: Bench = {
  name: 'checkpoints',
  async run({ quick }) {
    const root = mkdtempSync(join(tmpdir(), 'gh-bench-ck-'));
    const cwd = join(root, 'work');
    for (let d = 0; d < 20; d++) {
      mkdirSync(join(cwd, `dir${d}`), { recursive: true });
      for (let f = 0; f < FILES / 20; f++) {
        writeFileSync(join(cwd, `dir${d}`, `file${f}.txt`), `file ${d}/${f}\n`.repeat(20));
      }
    }
    const store = new CheckpointStore(join(root, 'home', 'checkpoints'), {
      ...CHECKPOINT_DEFAULTS,
      maxPerSession: 20,
    });
    const terminal = createTerminalTool();
    const [guarded] = guardTools(
      [terminal],
      [checkpointGuard(store, { sessionId: 'bench', admissionId: undefined, cwd, publish: () => undefined })],
    );
    const context = {
      cwd,
      signal: new AbortController().signal,
      sessionId: 'bench',
      admissionId: undefined,
      executionGeneration: 1,
      yolo: true,
    } as unknown as ToolContext;
    const args = { command: 'true' };
    const n = quick ? 10 : 40;
    const plain: number[] = [];
    const saved: number[] = [];
    const unchanged: number[] = [];
    let firstMs: number;
    const time = async (fn: () => Promise<unknown>, into: number[]) => {
      const t = performance.now();
      await fn();
      into.push(performance.now() - t);
    };
    try {
      // The first checkpoint creates the shadow repository and writes every file's object once.
      const first = performance.now();
      await guarded!.run(args, context);
      firstMs = performance.now() - first;
      for (let i = 0; i < n; i++) {
        await time(() => terminal.run(args, context), plain);
        writeFileSync(join(cwd, 'dir0', 'file0.txt'), `changed ${i}\n`);
        await time(() => guarded!.run(args, context), saved);
        await time(() => guarded!.run(args, context), unchanged);
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    for (const list of [plain, saved, unchanged]) list.sort((a, b) => a - b);
    const base = { name: 'plain terminal call p50', value: percentile(plain, 50) };
    return [
      figure({
        bench: 'checkpoints',
        name: `terminal call + new checkpoint (${FILES} files) p50`,
        value: percentile(saved, 50),
        unit: 'ms',
        baseline: base,
        higherIsBetter: false,
        aim: { op: '<=', ratio: 15 },
        extra: { samples: n, first_checkpoint_ms: Math.round(firstMs) },
      }),
      figure({
        bench: 'checkpoints',
        name: `terminal call + unchanged tree (${FILES} files) p50`,
        value: percentile(unchanged, 50),
        unit: 'ms',
        baseline: base,
        higherIsBetter: false,
        aim: { op: '<=', ratio: 15 },
        extra: { samples: n },
      }),
    ];
  },
};

export default bench;
