/**
 * The gate's commands as the README and docs/testing.md give them: `npm test` is the checks
 * (scripts/check.js) and then every test file; `npm run check` the checks alone; `npm run
 * test:quick` the unit and integration files. scripts/check.js type-checks once (both tsconfigs),
 * lints, checks the format and builds without a second type-check, at most two steps at a time,
 * and a failed step says which and shows its output. The test files run two per core
 * (GATEHOUSE_TEST_WORKERS overrides), the slowest first (test/sequencer.ts).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SLOWEST, startOrder, testWorkers } from '../sequencer.js';
import { processTreeCpuSeconds } from '../cpu-setup.js';
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
interface TestModule {
  CHECK_NICENESS: number;
  runTestsAndChecks(
    tests: Step,
    checks: Step[],
    options: { cwd?: string; write?: (text: string) => void },
  ): Promise<{ testCode: number; failed: string[] }>;
}
const gate = (await import(join(REPO, 'scripts', 'test.js'))) as TestModule;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A step that writes `started-<name>` listing the steps already ended, waits for `go-<name>`, then
 * writes `ended-<name>`: the test decides when each step ends, so no step's length matters.
 */
const STEP_SCRIPT = `
import { existsSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
const name = process.argv[2];
// Written whole, then renamed: the test reads a file as soon as it sees its name.
const put = (file, text) => { writeFileSync('.tmp-' + file, text); renameSync('.tmp-' + file, file); };
const ended = readdirSync('.').filter((f) => f.startsWith('ended-')).sort();
put('started-' + name, JSON.stringify(ended));
put('nice-' + name, String(os.getPriority()));
const timer = setInterval(() => {
  if (!existsSync('go-' + name)) return;
  clearInterval(timer);
  writeFileSync('ended-' + name, '');
  if (name === 'bad') { console.error('boom: what went wrong'); process.exitCode = 3; }
  if (name === 'tests-fail') process.exitCode = 1;
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

describe('scripts/test.js', () => {
  it('runs the tests and the checks at once, the checks at the lowest priority, and reports both', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-gate-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'step.mjs'), STEP_SCRIPT);
    const step = (name: string) => ({ name, args: ['step.mjs', name] });
    let printed = '';
    const run = gate.runTestsAndChecks(step('tests'), [step('lint'), step('bad')], {
      cwd: dir,
      write: (text) => (printed += text),
    });
    const started = () => readdirSync(dir).filter((f) => f.startsWith('started-'));
    // Nothing has ended, yet the tests and both checks have all started.
    await until(() => started().length === 3);
    expect(readdirSync(dir).filter((f) => f.startsWith('ended-'))).toEqual([]);
    await until(() => readdirSync(dir).filter((f) => f.startsWith('nice-')).length === 3);
    const nice = (name: string) => Number(readFileSync(join(dir, `nice-${name}`), 'utf8'));
    expect(nice('lint')).toBe(gate.CHECK_NICENESS);
    expect(nice('bad')).toBe(gate.CHECK_NICENESS);
    expect(nice('tests')).toBe(getPriority());
    for (const name of ['lint', 'bad', 'tests']) writeFileSync(join(dir, `go-${name}`), '');
    expect(await run).toEqual({ testCode: 0, failed: ['bad'] });
    expect(printed).toMatch(/^check: bad FAILED \(exit 3, \d+\.\d s\):\nboom: what went wrong$/m);
    expect(printed).toMatch(/^check: lint passed/m);
  });

  it('passes a SIGTERM on to the tests and every check, and starts no queued check after it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-gate-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'step.mjs'), STEP_SCRIPT);
    // Each step writes its pid, then waits for a go file that never comes.
    writeFileSync(
      join(dir, 'gate.mjs'),
      [
        `import { renameSync, writeFileSync } from 'node:fs';`,
        `const gate = await import(${JSON.stringify(join(REPO, 'scripts', 'test.js'))});`,
        `const step = (name) => ({ name, args: ['step.mjs', name] });`,
        `const result = await gate.runTestsAndChecks(step('tests'), [step('a'), step('b'), step('queued')], { cwd: process.cwd(), write: () => {} });`,
        `writeFileSync('.tmp-result.json', JSON.stringify(result));`,
        `renameSync('.tmp-result.json', 'result.json');`,
      ].join('\n'),
    );
    const gateProcess = spawn(process.execPath, ['gate.mjs'], { cwd: dir, stdio: 'ignore' });
    const started = () => readdirSync(dir).filter((f) => f.startsWith('started-'));
    await until(() => started().length === 3);
    gateProcess.kill('SIGTERM');
    await until(() => readdirSync(dir).includes('result.json'));
    expect(started().sort()).toEqual(['started-a', 'started-b', 'started-tests']);
    const result = JSON.parse(readFileSync(join(dir, 'result.json'), 'utf8')) as {
      testCode: number;
      failed: string[];
    };
    expect(result.testCode).toBe(1);
    // The queued check was started after the signal and ended at once: every check failed, none ran on.
    expect(result.failed.sort()).toEqual(['a', 'b', 'queued']);
    expect(readdirSync(dir).filter((f) => f.startsWith('ended-'))).toEqual([]);
  });

  it("passes on the tests' exit code", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-gate-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'step.mjs'), STEP_SCRIPT);
    writeFileSync(join(dir, 'go-tests-fail'), '');
    const result = await gate.runTestsAndChecks({ name: 'tests', args: ['step.mjs', 'tests-fail'] }, [], {
      cwd: dir,
      write: () => undefined,
    });
    expect(result).toEqual({ testCode: 1, failed: [] });
  });
});

describe('the gate commands', () => {
  const scripts = (
    JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    }
  ).scripts;

  it('npm test runs the build, then every test file beside the checks; npm run check the checks alone', () => {
    expect(scripts['test']).toBe('node scripts/test.js');
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
  it('runs two and a half files per core, or GATEHOUSE_TEST_WORKERS of them, and refuses a bad count', () => {
    expect(testWorkers({}, 2)).toBe(5);
    expect(testWorkers({}, 1)).toBe(3);
    expect(testWorkers({ GATEHOUSE_TEST_WORKERS: '' }, 8)).toBe(20);
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

  it('names the ten files that used the most CPU, with the total, when the files measured it', () => {
    const files = Array.from({ length: 12 }, (_, i) => ({
      path: `test/e2e/f${i}.test.ts`,
      seconds: 100 - i,
      cpuSeconds: i === 5 ? undefined : i * 2,
    }));
    const text = closingReport(files, { passed: 1, failed: 0, skipped: 0 });
    const cpuPart = text.slice(text.indexOf('most CPU'));
    expect(cpuPart.split('\n')[0]).toBe('most CPU (the file and what it started; 122 s over all files):');
    const named = [...cpuPart.matchAll(/s {2}(test\/e2e\/f\d+\.test\.ts)/g)].map((m) => m[1]);
    expect(named).toEqual([11, 10, 9, 8, 7, 6, 4, 3, 2, 1].map((i) => `test/e2e/f${i}.test.ts`));
    expect(cpuPart).toContain('  22.0 s  test/e2e/f11.test.ts');
    const unmeasured = closingReport([{ path: 'a', seconds: 1 }], { passed: 1, failed: 0, skipped: 0 });
    expect(unmeasured).not.toContain('most CPU');
  });

  it("reads a process's CPU and its waited-for children's from /proc/<pid>/stat, whatever its name holds", () => {
    // proc(5): pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    // utime stime cutime cstime ...
    const stat = '4242 (node (a) b) S 1 2 3 4 5 6 7 8 9 10 150 50 1000 25 20 0 1 0 99';
    expect(processTreeCpuSeconds(stat)).toBe(12.25);
    expect(processTreeCpuSeconds()).toBeGreaterThan(0);
  });
});
