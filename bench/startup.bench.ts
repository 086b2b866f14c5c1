/**
 * Start-up of the command and the daemon (issue 33: load only what the configuration uses):
 *
 * - `gatehouse --help`, spawn to exit;
 * - `gatehouse status` on a home with no daemon (it reads the config to name the model and store),
 *   and beside a running daemon (it reads gateway.json; neither asks the daemon anything);
 * - `gatehouse serve` on an empty home (SQLite, no chat platform), spawn to its ready line;
 * - that daemon's RSS once idle (half a second after ready);
 * - the CPU a daemon spends on its first command line: a turn of the demo model that runs `echo` in
 *   the terminal (loading the bash grammar the allow-list reads it with), counted from the turn's
 *   submission to 3 s after it completed, so the background compiles it set off are in it; against
 *   the CPU the same daemon spent from spawn to ready.
 *
 * The times are medians against spawning `node -e ''` to its exit, interleaved with them in the same
 * run; the RSS against an idle bare `node`. Each figure also says how many files, modules and
 * packages the process loaded, counted in one more run under test/fixtures/record-loads.mjs (not
 * timed): with the bundled build a file (a chunk) holds many modules (test/fixtures/bundle-inputs.ts).
 * GATEHOUSE_BENCH_CLI measures another build (e.g. main before a change) with the same bench.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  bareNodeRssKiB,
  CLI,
  CompletionRouter,
  cpuMs,
  nodeSpawnMs,
  requireBuild,
  rssKiB,
  startBenchDaemon,
  type BenchDaemon,
} from './gateway-daemon.js';
import { figure, percentile, type Bench, type BenchFigure } from './lib.js';
import { loadedModules } from '../test/fixtures/bundle-inputs.js';

const HOOK = pathToFileURL(
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../test/fixtures/record-loads.mjs'),
).href;

/** Milliseconds from spawning `gatehouse <args>` on `home` to its exit; a failure is an error. */
function cliMs(home: string, args: string[], env: NodeJS.ProcessEnv = {}, nodeArgs: string[] = []) {
  const start = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, CLI, ...args], {
    env: { ...process.env, GATEHOUSE_HOME: home, GATEHOUSE_DEBUG: '', ...env },
    stdio: 'ignore',
  });
  return new Promise<number>((resolve, reject) =>
    child.once('exit', (code) =>
      code === 0
        ? resolve(performance.now() - start)
        : reject(new Error(`gatehouse ${args.join(' ')} exited with ${code}`)),
    ),
  );
}

/** How long after the first command's turn its CPU is still counted (background compiles included). */
const FIRST_COMMAND_TAIL_MS = 3000;

/**
 * The daemon's CPU (ms) for its first turn that runs a command line, through FIRST_COMMAND_TAIL_MS
 * after it completed, and the CPU it used from spawn to ready.
 */
async function firstCommandCpu(): Promise<{ command: number; start: number }> {
  const daemon = await startBenchDaemon();
  try {
    const start = cpuMs(daemon.pid);
    const client = await daemon.connect();
    const router = new CompletionRouter(client);
    const cwd = mkdtempSync(path.join(tmpdir(), 'gh-bench-cwd-'));
    try {
      const { session_id } = await client.call<{ session_id: string }>('session.create', { cwd, yolo: true });
      await client.call('session.resume', { session_id });
      const before = cpuMs(daemon.pid);
      const receipt = await client.call<{ admission_id: string }>('prompt.submit', {
        session_id,
        submission_id: 'first-command',
        text: 'run: echo first',
      });
      await router.completion(receipt.admission_id);
      await sleep(FIRST_COMMAND_TAIL_MS);
      return { command: cpuMs(daemon.pid) - before, start };
    } finally {
      await client.close();
      rmSync(cwd, { recursive: true, force: true });
    }
  } finally {
    await daemon.close();
  }
}

/** The build the measured CLI runs from (dist/surfaces/cli/main.js → dist). */
const DIST = path.resolve(path.dirname(CLI), '../..');

/** Files, modules and packages a process recorded in `file` (one URL a line, repeats allowed). */
function countLoads(file: string): { files: number; modules: number; packages: number } {
  const files = new Set(readFileSync(file, 'utf8').split('\n').filter(Boolean));
  const modules = loadedModules([...files], DIST);
  const packages = new Set(
    modules.flatMap((m) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(m)?.[1] ?? []),
  );
  return { files: files.size, modules: modules.length, packages: packages.size };
}

/** One more, untimed run of the command under the recording hook. */
async function cliLoads(home: string, args: string[], dir: string) {
  const file = path.join(dir, `loads-${args.join('-')}-${Date.now()}.txt`);
  await cliMs(home, args, { GATEHOUSE_RECORD_LOADS: file }, ['--import', HOOK]);
  return countLoads(file);
}

const bench: Bench = {
  name: 'startup',
  async run({ quick }) {
    requireBuild();
    const runs = quick ? 5 : 21;
    const starts = quick ? 2 : 7;
    const dir = mkdtempSync(path.join(tmpdir(), 'gh-bench-startup-'));
    const emptyHome = path.join(dir, 'home');
    let running: BenchDaemon | null = null;
    try {
      // Interleaved, so a shift in the machine's load moves the baseline with the figures.
      const nodeMs: number[] = [];
      const helpMs: number[] = [];
      const statusMs: number[] = [];
      for (let i = 0; i < runs; i++) {
        nodeMs.push(await nodeSpawnMs());
        helpMs.push(await cliMs(emptyHome, ['--help']));
        statusMs.push(await cliMs(emptyHome, ['status']));
      }

      const readyMs: number[] = [];
      const idleKiB: number[] = [];
      const bareKiB: number[] = [];
      for (let i = 0; i < starts; i++) {
        nodeMs.push(await nodeSpawnMs());
        bareKiB.push(await bareNodeRssKiB());
        const daemon = await startBenchDaemon();
        readyMs.push(daemon.readyMs);
        // Start-up garbage settles a moment before the idle figure is read.
        await sleep(500);
        idleKiB.push(rssKiB(daemon.pid));
        await daemon.close();
      }

      const commandCpu: number[] = [];
      const startCpu: number[] = [];
      for (let i = 0; i < (quick ? 2 : 5); i++) {
        const { command, start } = await firstCommandCpu();
        commandCpu.push(command);
        startCpu.push(start);
      }

      running = await startBenchDaemon();
      const runningStatusMs: number[] = [];
      const runningNodeMs: number[] = [];
      for (let i = 0; i < runs; i++) {
        runningNodeMs.push(await nodeSpawnMs());
        runningStatusMs.push(await cliMs(running.home, ['status']));
      }
      const runningLoads = await cliLoads(running.home, ['status'], dir);
      await running.close();
      running = null;

      const helpLoads = await cliLoads(emptyHome, ['--help'], dir);
      const statusLoads = await cliLoads(emptyHome, ['status'], dir);
      const daemonFile = path.join(dir, 'loads-serve.txt');
      const recorded = await startBenchDaemon(undefined, undefined, ['--import', HOOK], {
        GATEHOUSE_RECORD_LOADS: daemonFile,
      });
      const daemonLoads = countLoads(daemonFile);
      await recorded.close();

      for (const samples of [nodeMs, helpMs, statusMs, readyMs, runningNodeMs, runningStatusMs]) {
        samples.sort((a, b) => a - b);
      }
      idleKiB.sort((a, b) => a - b);
      commandCpu.sort((a, b) => a - b);
      startCpu.sort((a, b) => a - b);
      bareKiB.sort((a, b) => a - b);
      const node = { name: "node -e '' spawn→exit (median)", value: percentile(nodeMs, 50) };
      const time = (
        name: string,
        samples: number[],
        loads: { files: number; modules: number; packages: number },
        baseline = node,
      ): BenchFigure =>
        figure({
          bench: 'startup',
          name,
          value: percentile(samples, 50),
          unit: 'ms',
          baseline,
          higherIsBetter: false,
          extra: { runs: samples.length, ...loads },
        });
      return [
        time('gatehouse --help (median)', helpMs, helpLoads),
        time('gatehouse status, no daemon (median)', statusMs, statusLoads),
        time('gatehouse status, daemon running (median)', runningStatusMs, runningLoads, {
          name: node.name,
          value: percentile(runningNodeMs, 50),
        }),
        time('serve → ready, empty home (median)', readyMs, daemonLoads),
        figure({
          bench: 'startup',
          name: 'idle daemon RSS (median)',
          value: percentile(idleKiB, 50) / 1024,
          unit: 'MiB',
          baseline: { name: 'idle bare node RSS (median)', value: percentile(bareKiB, 50) / 1024 },
          higherIsBetter: false,
          extra: { starts, ...daemonLoads },
        }),
        figure({
          bench: 'startup',
          name: 'daemon CPU, first command turn + 3 s (median)',
          value: percentile(commandCpu, 50),
          unit: 'ms',
          baseline: { name: 'daemon CPU, spawn → ready (median)', value: percentile(startCpu, 50) },
          higherIsBetter: false,
          extra: { daemons: commandCpu.length },
        }),
      ];
    } finally {
      await running?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

export default bench;
