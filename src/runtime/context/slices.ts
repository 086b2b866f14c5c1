/**
 * Long CPU work of a compression (counting the tokens of a long transcript) in bounded slices:
 * `due()` says when the current slice has run SLICE_MS, and `pause()` lets the event loop run what
 * waits (other sessions' turns, I/O, timers) before the next slice. Counting 100,000 messages in
 * one go stopped the daemon for many seconds (docs/benchmarks.md, "Event loop").
 */
import { performance } from 'node:perf_hooks';

/** The longest a slice of such work runs before the event loop gets a turn, in ms. */
export const SLICE_MS = 10;

export class LoopSlices {
  private start = performance.now();

  due(): boolean {
    return performance.now() - this.start >= SLICE_MS;
  }

  async pause(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.start = performance.now();
  }
}

/** Runs steps that yield at their pause points (compress.ts planSteps), a slice at a time. */
export async function runInSlices<T>(
  steps: Generator<void, T, undefined>,
  slices = new LoopSlices(),
): Promise<T> {
  for (;;) {
    if (slices.due()) await slices.pause();
    const step = steps.next();
    if (step.done) return step.value;
  }
}
