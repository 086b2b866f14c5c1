/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, after vitest's own report,
 * so CI and scripts can read the outcome without parsing vitest's formatting; before it, the ten
 * files that took longest (their tests and hooks, and their collection), so every run's log says
 * where the gate's time went (docs/testing.md, "Where the time goes").
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

/** The closing lines: the slowest files, longest first, then the counts. */
export function closingReport(
  files: ReadonlyArray<{ path: string; seconds: number }>,
  counts: { passed: number; failed: number; skipped: number },
): string {
  const slowest = [...files].sort((a, b) => b.seconds - a.seconds).slice(0, SLOWEST_SHOWN);
  const lines = slowest.map((file) => `  ${file.seconds.toFixed(1).padStart(6)} s  ${file.path}`);
  const head = lines.length > 0 ? `\nslowest files:\n${lines.join('\n')}\n` : '';
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
    }));
    process.stdout.write(closingReport(files, { passed, failed, skipped }));
  }
}
