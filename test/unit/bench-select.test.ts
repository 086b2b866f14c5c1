/**
 * Issue 12 item 13: the soak runs only when named, with its length from `--minutes`, exactly as
 * docs/benchmarks.md says (`npm run bench -- soak --minutes 30`); the default run leaves it out.
 */
import { describe, expect, it } from 'vitest';
import soak from '../../bench/soak.bench.js';
import { parseBenchArgs, runsBench } from '../../bench/select.js';

describe('issue 12 item 13: bench selection', () => {
  it('`npm run bench -- soak --minutes 30` runs the soak for 30 minutes', () => {
    const args = parseBenchArgs(['soak', '--minutes', '30']);
    expect(args).toEqual({ quick: false, minutes: 30, only: ['soak'] });
    expect(runsBench('soak.bench.ts', args.only, soak.onlyWhenNamed)).toBe(true);
    expect(runsBench('store.bench.ts', args.only)).toBe(false);
  });

  it('the default run (`npm run bench`) leaves the soak out and runs the others', () => {
    const { only } = parseBenchArgs([]);
    expect(soak.onlyWhenNamed).toBe(true);
    expect(runsBench('soak.bench.ts', only, soak.onlyWhenNamed)).toBe(false);
    expect(runsBench('store.bench.ts', only, false)).toBe(true);
    expect(runsBench('soak.bench.ts', parseBenchArgs(['--quick']).only, soak.onlyWhenNamed)).toBe(false);
  });

  it('`npm run bench -- large-outputs` runs that bench alone, as docs/benchmarks.md shows', async () => {
    const { default: largeOutputs } = await import('../../bench/large-outputs.bench.js');
    const { only } = parseBenchArgs(['large-outputs']);
    expect(largeOutputs.name).toBe('large-outputs');
    expect(runsBench('large-outputs.bench.ts', only, largeOutputs.onlyWhenNamed)).toBe(true);
    expect(runsBench('agent-cache.bench.ts', only)).toBe(false);
  });

  it('`npm run bench -- event-loop` runs the event-loop bench alone, as docs/benchmarks.md shows', async () => {
    const { default: eventLoop } = await import('../../bench/event-loop.bench.js');
    const { only } = parseBenchArgs(['event-loop']);
    expect(eventLoop.name).toBe('event-loop');
    expect(runsBench('event-loop.bench.ts', only, eventLoop.onlyWhenNamed)).toBe(true);
    expect(runsBench('gateway-turns.bench.ts', only)).toBe(false);
  });

  it('`npm run bench -- startup` runs the start-up bench alone, as docs/benchmarks.md shows', async () => {
    const { default: startup } = await import('../../bench/startup.bench.js');
    const { only } = parseBenchArgs(['startup']);
    expect(startup.name).toBe('startup');
    expect(runsBench('startup.bench.ts', only, startup.onlyWhenNamed)).toBe(true);
    expect(runsBench('gateway-footprint.bench.ts', only)).toBe(false);
  });

  it('`npm run bench -- fanout` runs the fan-out bench alone, as docs/benchmarks.md shows', async () => {
    const { default: fanout } = await import('../../bench/fanout.bench.js');
    const { only } = parseBenchArgs(['fanout']);
    expect(fanout.name).toBe('fanout');
    expect(runsBench('fanout.bench.ts', only, fanout.onlyWhenNamed)).toBe(true);
    expect(runsBench('gateway-turns.bench.ts', only)).toBe(false);
  });

  it('refuses a --minutes that is not a positive number, saying what to give', () => {
    for (const bad of [
      ['soak', '--minutes'],
      ['soak', '--minutes', 'ten'],
      ['soak', '--minutes', '0'],
    ]) {
      expect(() => parseBenchArgs(bad)).toThrow(/--minutes needs a positive number/);
    }
  });
});
