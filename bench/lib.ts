/**
 * Benchmark helpers. Every figure is reported as a ratio against a baseline measured in the same
 * run, because these machines are shared and absolute times drift.
 */
import { performance } from 'node:perf_hooks';

/** One reported figure: a measured value, its baseline from the same run, and the aim. */
export interface BenchFigure {
  bench: string;
  name: string;
  value: number;
  unit: string;
  baseline: { name: string; value: number } | null;
  /** value / baseline.value (or baseline/value where lower is better; see `higherIsBetter`). */
  ratio: number | null;
  higherIsBetter: boolean;
  /** The aim as a ratio, e.g. `>= 0.8` or `<= 2`. */
  aim: string | null;
  met: boolean | null;
  extra?: Record<string, number | string>;
}

export interface Bench {
  name: string;
  /** Left out of the default run (a long soak); runs only when named: `npm run bench -- soak`. */
  onlyWhenNamed?: boolean;
  run(options: { quick: boolean; minutes?: number }): Promise<BenchFigure[]>;
}

/** Calls `fn` repeatedly for about `ms` milliseconds (after a short warm-up); returns calls/second. */
export async function rate(fn: () => unknown, ms = 1000): Promise<number> {
  const warmEnd = performance.now() + Math.min(200, ms / 5);
  while (performance.now() < warmEnd) await fn();
  let count = 0;
  const start = performance.now();
  const end = start + ms;
  while (performance.now() < end) {
    await fn();
    count++;
  }
  return count / ((performance.now() - start) / 1000);
}

/** Times each of `n` calls; returns the sorted samples in milliseconds. */
export async function samples(fn: () => unknown, n: number, warmup = Math.min(20, n)): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out.sort((a, b) => a - b);
}

/** Median time of `n` calls, in milliseconds. */
export async function medianMs(fn: () => unknown, n: number): Promise<number> {
  return percentile(await samples(fn, n, Math.min(3, n)), 50);
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

/** Builds a figure; `aim` is compared against the ratio. */
export function figure(input: {
  bench: string;
  name: string;
  value: number;
  unit: string;
  baseline?: { name: string; value: number };
  higherIsBetter?: boolean;
  aim?: { op: '>=' | '<='; ratio: number };
  extra?: Record<string, number | string>;
}): BenchFigure {
  const higherIsBetter = input.higherIsBetter ?? true;
  const ratio = input.baseline ? input.value / input.baseline.value : null;
  const met =
    ratio !== null && input.aim
      ? input.aim.op === '>='
        ? ratio >= input.aim.ratio
        : ratio <= input.aim.ratio
      : null;
  return {
    bench: input.bench,
    name: input.name,
    value: input.value,
    unit: input.unit,
    baseline: input.baseline ?? null,
    ratio,
    higherIsBetter,
    aim: input.aim ? `${input.aim.op} ${input.aim.ratio}` : null,
    met,
    ...(input.extra ? { extra: input.extra } : {}),
  };
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) >= 100) return n.toFixed(0);
  if (Math.abs(n) >= 1) return n.toFixed(2);
  return n.toPrecision(3);
}

/** A readable table of figures. */
export function table(figures: BenchFigure[]): string {
  const rows = figures.map((f) => [
    f.bench,
    f.name,
    `${fmt(f.value)} ${f.unit}`,
    f.baseline ? `${f.baseline.name} = ${fmt(f.baseline.value)}` : '-',
    f.ratio === null ? '-' : `${fmt(f.ratio)}x`,
    f.aim ?? '-',
    f.met === null ? '-' : f.met ? 'yes' : 'NO',
  ]);
  const header = ['bench', 'figure', 'value', 'baseline (same run)', 'ratio', 'aim', 'met'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
