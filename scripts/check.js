#!/usr/bin/env node
/**
 * The gate's checks (`npm run check`; `npm test` runs them beside the tests, scripts/test.js): the
 * type-check (once: the project's tsconfig and the dashboard page's), ESLint, the format check and
 * the build. The build emits without type-checking again (`scripts/build.js --no-check`): the
 * type-check here already covered every file it compiles. It builds only when dist is older than a
 * source or config file (`--if-stale`): on a fresh clone `npm ci`'s prepare step has just built it
 * from the same files, and building it again would only repeat that work.
 *
 * At most two steps run at once (the gate's machine has two cores; each step is one busy process),
 * longest first. Each step's output is held and printed when it ends, with its time, so two steps
 * never interleave; a failed step prints its output and the run ends with the list of what failed
 * and exit code 1, after the steps already running have finished.
 *
 * Plain JavaScript on purpose: it runs before anything is compiled.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (...path) => join(root, 'node_modules', ...path);

/** The build: tsc without a second type-check, the bundles; only when dist is older than a source. */
export const BUILD_STEP = {
  name: 'build (when stale, no second type-check)',
  args: [join('scripts', 'build.js'), '--if-stale', '--no-check'],
};

/** The checks proper, longest first (the order they start in). Each is one node process. */
export const CHECK_STEPS = [
  { name: 'eslint', args: [bin('eslint', 'bin', 'eslint.js'), '.'] },
  { name: 'typecheck', args: [bin('typescript', 'bin', 'tsc'), '-p', 'tsconfig.json', '--noEmit'] },
  {
    name: 'typecheck (dashboard page)',
    args: [bin('typescript', 'bin', 'tsc'), '-p', 'src/surfaces/dashboard/web/tsconfig.json', '--noEmit'],
  },
  { name: 'prettier --check', args: [bin('prettier', 'bin', 'prettier.cjs'), '--check', '.'] },
];

/** `npm run check`: the checks and the build, longest first. */
export const STEPS = [CHECK_STEPS[0], CHECK_STEPS[1], BUILD_STEP, ...CHECK_STEPS.slice(2)];

/**
 * Runs one step, its output held; resolves with its exit code, output and seconds. `onStart` gets
 * the child process as soon as it is spawned (scripts/test.js lowers its priority).
 */
export function runStep(step, cwd, onStart = () => {}) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, step.args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    onStart(child);
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => (output += `${error.message}\n`));
    child.on('close', (code, signal) =>
      resolve({
        code: code ?? (signal ? `killed by ${signal}` : 1),
        output,
        seconds: (Date.now() - started) / 1000,
      }),
    );
  });
}

/**
 * Runs `steps` at most `parallel` at a time, in order, printing each as it ends. Resolves with the
 * names of the steps that failed (empty: all passed).
 */
export async function runSteps(
  steps,
  { parallel = 2, cwd = root, write = (text) => process.stdout.write(text), onStart } = {},
) {
  const failed = [];
  const queue = [...steps];
  const worker = async () => {
    for (let step = queue.shift(); step; step = queue.shift()) {
      const result = await runStep(step, cwd, onStart);
      const time = `${result.seconds.toFixed(1)} s`;
      if (result.code === 0) {
        write(`check: ${step.name} passed (${time})\n`);
      } else {
        failed.push(step.name);
        write(`check: ${step.name} FAILED (exit ${result.code}, ${time}):\n${result.output.trimEnd()}\n`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, parallel) }, worker));
  return failed;
}

async function main() {
  const started = Date.now();
  const failed = await runSteps(STEPS);
  const total = `${((Date.now() - started) / 1000).toFixed(1)} s`;
  if (failed.length === 0) {
    process.stdout.write(`check: all ${STEPS.length} steps passed (${total})\n`);
    return 0;
  }
  process.stderr.write(
    `check: ${failed.length} of ${STEPS.length} steps failed (${total}): ${failed.join(', ')}; their output is above\n`,
  );
  return 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
