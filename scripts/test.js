#!/usr/bin/env node
/**
 * `npm test`: the whole gate in one command. The build (when stale) comes first, since the
 * end-to-end files start the built daemon; then the tests (`vitest run`, with any arguments given
 * to `npm test -- …`) and the checks (scripts/check.js's type-checks, ESLint and the format check)
 * run at the same time, the checks at the lowest CPU priority.
 *
 * Why side by side: the test files spend part of their time waiting (on daemons starting, leases
 * expiring, a model call timing out), so a 2-core machine running them has CPU to spare, and the
 * checks (a couple of minutes of CPU, ESLint the longest) fit in it. At nice 19 a check gets the
 * CPU only when no test process wants it, so the tests run as fast as they would alone and the
 * checks no longer add their own minutes before the first test starts (docs/testing.md).
 *
 * Each check prints its line when it ends (a failed one with its output, at once); after the tests
 * the run prints the checks' outcome again and exits 1 if a check or a test failed. A failed check
 * does not stop the tests: one run reports everything that is wrong.
 *
 * Plain JavaScript on purpose: it runs before anything is compiled.
 */
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { BUILD_STEP, CHECK_STEPS, root, runStep, runSteps } from './check.js';

/** The niceness the checks run at: the lowest priority, so they use only CPU the tests leave. */
export const CHECK_NICENESS = 19;

/** Lowers a started check's CPU priority; a platform that cannot is left as it is. */
function lowerPriority(child) {
  try {
    if (child.pid !== undefined) setPriority(child.pid, CHECK_NICENESS);
  } catch {
    // Not permitted or not supported: the check runs at normal priority, which is still correct.
  }
}

/** Sends `signal` to every child still running: a stopped gate leaves nothing behind. */
function signalAll(children, signal) {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill(signal);
}

/**
 * Runs `tests` (one process, output to this process's) while `checks` run at most two at a time at
 * the lowest priority. Resolves with the tests' exit code and the names of the checks that failed.
 */
export async function runTestsAndChecks(
  tests,
  checks,
  { cwd = root, write = (text) => process.stdout.write(text), parallel = 2 } = {},
) {
  const children = new Set();
  // A signal to the gate (not to its process group, as a terminal's Ctrl-C is) reaches the tests
  // and every check, and the gate ends when they have.
  let stopping = null;
  const forward = (signal) => {
    stopping = signal;
    signalAll(children, signal);
  };
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  const testRun = new Promise((resolve) => {
    const child = spawn(process.execPath, tests.args, { cwd, stdio: 'inherit' });
    children.add(child);
    child.on('error', (error) => {
      write(`test: could not start the tests: ${error.message}\n`);
      resolve(1);
    });
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
  const onStart = (child) => {
    children.add(child);
    lowerPriority(child);
    // A check the queue starts after the signal ends at once.
    if (stopping) child.kill(stopping);
  };
  const failedChecks = runSteps(checks, { parallel, cwd, write, onStart });
  try {
    const [testCode, failed] = await Promise.all([testRun, failedChecks]);
    return { testCode, failed };
  } finally {
    process.off('SIGINT', forward);
    process.off('SIGTERM', forward);
  }
}

async function main() {
  const started = Date.now();
  const build = await runStep(BUILD_STEP, root);
  if (build.code !== 0) {
    process.stderr.write(`test: the build failed, so no test ran:\n${build.output.trimEnd()}\n`);
    return 1;
  }
  const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
  const { testCode, failed } = await runTestsAndChecks(
    { args: [vitest, 'run', ...process.argv.slice(2)] },
    CHECK_STEPS,
  );
  const total = `${((Date.now() - started) / 1000).toFixed(1)} s`;
  if (failed.length === 0) process.stdout.write(`check: all ${CHECK_STEPS.length} checks passed\n`);
  else
    process.stderr.write(
      `check: ${failed.length} of ${CHECK_STEPS.length} checks failed: ${failed.join(', ')}; their output is above\n`,
    );
  const outcome = testCode === 0 && failed.length === 0 ? 'passed' : 'FAILED';
  process.stdout.write(`test: the gate ${outcome} (${total})\n`);
  return outcome === 'passed' ? 0 : 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
