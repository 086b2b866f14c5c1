import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer, testWorkers } from './test/sequencer.js';

export default defineConfig({
  test: {
    pool: 'forks',
    // Two and a half files per core (GATEHOUSE_TEST_WORKERS overrides), longest first: test/sequencer.ts.
    maxWorkers: testWorkers(process.env, availableParallelism()),
    sequence: { sequencer: LongestFirstSequencer },
    reporters: ['default', './test/summary-reporter.ts'],
    // Each file's CPU, with the processes it started, for the closing report's "most CPU" list.
    setupFiles: ['./test/cpu-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      {
        extends: true,
        // In-process files share their worker's loaded modules (half their CPU was loading them
        // again for every file); each still gets its own temp dirs, stores and schemas.
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'],
          isolate: false,
        },
      },
      {
        extends: true,
        // End-to-end files share their worker too: a fresh process per file cost about a second of
        // CPU each (the fork, vitest's runtime, the harness and the src modules it imports), about a
        // tenth of the files' own CPU. What they start is theirs to stop: every daemon, server, bash
        // and browser is stopped by the file's own hooks, no file changes process.env, the working
        // directory or mocks, and a helper module registers no hook at its top level (it runs once
        // per worker): its files call a use…() that does (useFixture, useMcpCleanup).
        //
        // Their cases get 60 s (hooks too): each starts real daemons, and beside a second gate run
        // (load 20-27 on two cores) cases that take 4-8 s alone took past 30 s (docs/testing.md). A
        // case that hangs still fails, at 60 s; a case that needs longer says so itself.
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          isolate: false,
          // With the root's cpu-setup (arrays of an extending project are joined): a failed case
          // prints what became of its file's daemons, and why one stopped itself.
          setupFiles: ['./test/e2e/failure-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
