/**
 * The gate's commands as the README and docs/testing.md give them: `npm test` is the checks
 * (scripts/check.js) and then every test file; `npm run check` the checks alone; `npm run
 * test:quick` the unit and integration files. scripts/check.js type-checks once (both tsconfigs),
 * lints, checks the format and builds without a second type-check, at most two steps at a time,
 * and a failed step says which and shows its output. The test files run two per core
 * (GATEHOUSE_TEST_WORKERS overrides), the slowest first (test/sequencer.ts).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SLOWEST, startOrder, testWorkers } from '../sequencer.js';
import { closingReport } from '../summary-reporter.js';

const REPO = resolve(import.meta.dirname, '../..');

interface Step {
  name: string;
  args: string[];
}
interface CheckModule {
  STEPS: Step[];
  runSteps(
    steps: Step[],
    options: { parallel?: number; cwd?: string; write?: (text: string) => void },
  ): Promise<string[]>;
}
const checkPath = join(REPO, 'scripts', 'check.js');
const check = (await import(checkPath)) as CheckModule;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A step that writes `started-<name>` listing the steps already ended, waits for `go-<name>`, then
 * writes `ended-<name>`: the test decides when each step ends, so no step's length matters.
 */
const STEP_SCRIPT = `
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
const name = process.argv[2];
const ended = readdirSync('.').filter((f) => f.startsWith('ended-')).sort();
writeFileSync('started-' + name, JSON.stringify(ended));
const timer = setInterval(() => {
  if (!existsSync('go-' + name)) return;
  clearInterval(timer);
  writeFileSync('ended-' + name, '');
  if (name === 'bad') { console.error('boom: what went wrong'); process.exitCode = 3; }
}, 10);
`;

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setTimeout(r, 10));
}

describe('scripts/check.js', () => {
  it('type-checks both tsconfigs once, lints, checks the format and builds (when stale) without type-checking again', () => {
    const commands = check.STEPS.map((s) => s.args.map((a) => a.replace(REPO + '/', '')).join(' '));
    expect(commands).toEqual(
      expect.arrayContaining([
        'node_modules/typescript/bin/tsc -p tsconfig.json --noEmit',
        'node_modules/typescript/bin/tsc -p src/surfaces/dashboard/web/tsconfig.json --noEmit',
        'node_modules/eslint/bin/eslint.js .',
        'node_modules/prettier/bin/prettier.cjs --check .',
        'scripts/build.js --if-stale --no-check',
      ]),
    );
    expect(commands).toHaveLength(5);
  });

  it(
    'runs at most two steps at once, in order, and names a failed step with its output',
    { timeout: 60_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gh-check-'));
      dirs.push(dir);
      writeFileSync(join(dir, 'step.mjs'), STEP_SCRIPT);
      const step = (name: string) => ({ name, args: ['step.mjs', name] });
      let printed = '';
      const run = check.runSteps([step('a'), step('bad'), step('c')], {
        parallel: 2,
        cwd: dir,
        write: (text) => (printed += text),
      });
      const started = () => readdirSync(dir).filter((f) => f.startsWith('started-'));
      await until(() => started().length === 2);
      // c waits for a free slot: it starts only once a has ended, while bad still runs.
      writeFileSync(join(dir, 'go-a'), '');
      await until(() => started().includes('started-c'));
      expect(JSON.parse(readFileSync(join(dir, 'started-c'), 'utf8'))).toEqual(['ended-a']);
      writeFileSync(join(dir, 'go-bad'), '');
      writeFileSync(join(dir, 'go-c'), '');
      expect(await run).toEqual(['bad']);
      expect(printed).toMatch(/^check: a passed \(\d+\.\d s\)$/m);
      expect(printed).toMatch(/^check: bad FAILED \(exit 3, \d+\.\d s\):\nboom: what went wrong$/m);
      expect(printed).toMatch(/^check: c passed/m);
    },
  );
});

describe('the gate commands', () => {
  const scripts = (
    JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    }
  ).scripts;

  it('npm test runs the checks and then every test file; npm run check the checks alone', () => {
    expect(scripts['test']).toBe('node scripts/check.js && vitest run');
    expect(scripts['check']).toBe('node scripts/check.js');
  });

  it('npm run test:quick runs the unit and integration files only', () => {
    expect(scripts['test:quick']).toBe('vitest run test/unit test/integration');
  });

  it('the README and docs/testing.md give all three', () => {
    for (const doc of ['README.md', 'docs/testing.md']) {
      const text = readFileSync(join(REPO, doc), 'utf8');
      for (const command of ['npm test', 'npm run check', 'npm run test:quick'])
        expect(text).toContain(command);
    }
  });
});

describe('the test run plan (test/sequencer.ts)', () => {
  it('runs two files per core, or GATEHOUSE_TEST_WORKERS of them, and refuses a bad count', () => {
    expect(testWorkers({}, 2)).toBe(4);
    expect(testWorkers({ GATEHOUSE_TEST_WORKERS: '' }, 8)).toBe(16);
    expect(testWorkers({ GATEHOUSE_TEST_WORKERS: '1' }, 2)).toBe(1);
    for (const bad of ['0', '-2', '1.5', 'many'])
      expect(() => testWorkers({ GATEHOUSE_TEST_WORKERS: bad }, 2)).toThrow(
        `GATEHOUSE_TEST_WORKERS must be a whole number of at least 1, not '${bad}'`,
      );
  });

  it('starts the files measured slowest first, in that order, then e2e, integration and unit files, larger first', () => {
    const sizes: Record<string, number> = {
      'test/unit/a.test.ts': 10,
      'test/unit/b.test.ts': 500,
      'test/integration/c.test.ts': 5,
      'test/e2e/small.test.ts': 1,
      'test/e2e/large.test.ts': 900,
      'test/e2e/recovery.test.ts': 2,
      'test/e2e/cluster-torture.test.ts': 3,
      'test/e2e/torture.test.ts': 4,
    };
    expect(startOrder(Object.keys(sizes), (path) => sizes[path]!)).toEqual([
      'test/e2e/cluster-torture.test.ts',
      'test/e2e/torture.test.ts',
      'test/e2e/recovery.test.ts',
      'test/e2e/large.test.ts',
      'test/e2e/small.test.ts',
      'test/integration/c.test.ts',
      'test/unit/b.test.ts',
      'test/unit/a.test.ts',
    ]);
  });

  it('names only files that exist', () => {
    for (const path of SLOWEST) expect(readFileSync(join(REPO, path), 'utf8').length).toBeGreaterThan(0);
  });

  it('closes a run with its ten slowest files, longest first, and the counts', () => {
    const files = Array.from({ length: 12 }, (_, i) => ({
      path: `test/e2e/f${i}.test.ts`,
      seconds: i * 1.5,
    }));
    const text = closingReport(files, { passed: 7, failed: 1, skipped: 2 });
    const named = [...text.matchAll(/s {2}(test\/e2e\/f\d+\.test\.ts)/g)].map((m) => m[1]);
    expect(named).toEqual([11, 10, 9, 8, 7, 6, 5, 4, 3, 2].map((i) => `test/e2e/f${i}.test.ts`));
    expect(text).toContain('  16.5 s  test/e2e/f11.test.ts');
    expect(text.trimEnd().split('\n').at(-1)).toBe('tests: 7 passed, 1 failed, 2 skipped');
  });
});
