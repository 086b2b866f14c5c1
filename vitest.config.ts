import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer, testWorkers } from './test/sequencer.js';

export default defineConfig({
  test: {
    pool: 'forks',
    // Two files per core (GATEHOUSE_TEST_WORKERS overrides), longest first: test/sequencer.ts.
    maxWorkers: testWorkers(process.env, availableParallelism()),
    sequence: { sequencer: LongestFirstSequencer },
    reporters: ['default', './test/summary-reporter.ts'],
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
        // A process of its own per file: these start daemons, bash and browsers, and a leftover
        // timer or child of one file must not outlive it into the next.
        test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'] },
      },
    ],
  },
});
