/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, after vitest's own report,
 * so CI and scripts can read the outcome without parsing vitest's formatting; before it, the ten
 * files that took longest (their tests and hooks, and their collection) and the ten that used the
 * most CPU with the processes they started (test/cpu-setup.ts), so every run's log says where the
 * gate's time went (docs/testing.md, "Where the time goes").
 */
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/** How many of the slowest files the closing report names. */
const SLOWEST_SHOWN = 10;

/** A file's own wall time: collecting it, then its tests and hooks. */
export function fileSeconds(module: TestModule): number {
  const diagnostic = module.diagnostic();
  return (diagnostic.collectDuration + diagnostic.duration) / 1000;
}

export interface FileFigures {
  path: string;
  /** Wall seconds: collecting the file, then its tests and hooks. */
  seconds: number;
  /** CPU seconds of its worker and the processes it waited for, when measured. */
  cpuSeconds?: number;
}

function topLines(files: readonly FileFigures[], value: (file: FileFigures) => number | undefined): string[] {
  return files
    .filter((file) => value(file) !== undefined)
    .sort((a, b) => value(b)! - value(a)!)
    .slice(0, SLOWEST_SHOWN)
    .map((file) => `  ${value(file)!.toFixed(1).padStart(6)} s  ${file.path}`);
}

/** The closing lines: the slowest files, the files with the most CPU, then the counts. */
export function closingReport(
  files: readonly FileFigures[],
  counts: { passed: number; failed: number; skipped: number },
): string {
  let head = '';
  const slowest = topLines(files, (file) => file.seconds);
  if (slowest.length > 0) head += `\nslowest files:\n${slowest.join('\n')}\n`;
  const busiest = topLines(files, (file) => file.cpuSeconds);
  if (busiest.length > 0) {
    const total = files.reduce((sum, file) => sum + (file.cpuSeconds ?? 0), 0);
    head += `\nmost CPU (the file and what it started; ${total.toFixed(0)} s over all files):\n${busiest.join('\n')}\n`;
  }
  return `${head}\ntests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`;
}

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) failed++;
    }
    failed += unhandledErrors.length;
    const files = testModules.map((module) => ({
      path: relative(process.cwd(), module.moduleId).split('\\').join('/'),
      seconds: fileSeconds(module),
      cpuSeconds: module.meta().cpuSeconds,
    }));
    process.stdout.write(closingReport(files, { passed, failed, skipped }));
  }
}
