/**
 * Shared pieces of the gateway benchmarks (not itself a bench: the name does not end in .bench.ts).
 *
 * Topology: the daemon is the real built CLI (`gatehouse serve`, dist/surfaces/cli/main.js) in its
 * own child process with a temp GATEHOUSE_HOME; the WebSocket clients, the demo model and the
 * baselines run in the bench process. The echo ceiling runs in a child process too, so the daemon
 * and its baseline sit on the same side of a process boundary.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { daemonEnvironment } from '../src/daemon/allocator.js';
import { homeLayout } from '../src/daemon/home.js';
import { GatewayClient, type Notification } from '../src/surfaces/client/rpc-client.js';
import { requestTicket } from '../src/surfaces/control/client.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/**
 * The built CLI the benches run: this checkout's, or the one GATEHOUSE_BENCH_CLI names (another
 * build, e.g. of main before a change, measured by the same bench in the same run of the machine).
 */
export const CLI = process.env['GATEHOUSE_BENCH_CLI'] ?? path.join(root, 'dist/surfaces/cli/main.js');
export const READY = 'Gatehouse is ready at';

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/** Config YAML that points the daemon at a model the bench owns. */
export function configFor(options: { modelBaseUrl?: string; maxConcurrentTurns?: number }): string {
  const lines: string[] = [];
  if (options.modelBaseUrl) {
    lines.push('model:', `  base_url: ${options.modelBaseUrl}`, '  model: gatehouse-demo');
  }
  if (options.maxConcurrentTurns) {
    lines.push('limits:', `  max_concurrent_turns: ${options.maxConcurrentTurns}`);
  }
  return `${lines.join('\n')}\n`;
}

export interface BenchDaemon {
  home: string;
  child: ChildProcess;
  pid: number;
  url: string;
  /** Milliseconds from spawn to the ready line on stdout. */
  readyMs: number;
  /** The first 10,000 characters the daemon wrote on stderr. */
  stderr(): string;
  connect(): Promise<GatewayClient>;
  /** Ends the daemon (SIGTERM, SIGKILL if it lingers: the bench keeps nothing) and removes its home. */
  close(): Promise<void>;
}

export function requireBuild(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first`);
}

/** Spawns `gatehouse serve` in a fresh temp home and waits for its ready line. */
/**
 * Starts `gatehouse serve` on a temp home. `parent` puts that home elsewhere than the system temp
 * directory (e.g. on tmpfs, to take the disk's flush cost out of a measurement); `extraNodeArgs`
 * are Node options for the daemon (e.g. `--inspect=127.0.0.1:0`, to force a GC in it).
 */
export async function startBenchDaemon(
  config?: string,
  parent?: string,
  extraNodeArgs: string[] = [],
  /** Variables added to the daemon's environment (e.g. the one `store.url_env` names). */
  env: NodeJS.ProcessEnv = {},
  /** An existing home to serve (a prepared store); `close()` then leaves it in place. */
  existingHome?: string,
): Promise<BenchDaemon> {
  requireBuild();
  const base = existingHome ?? (parent ? mkdtempSync(path.join(parent, 'gh-bench-')) : tempDir('gh-bench-'));
  const home = existingHome ?? path.join(base, 'home');
  if (config !== undefined && existingHome === undefined) {
    mkdirSync(home, { recursive: true, mode: 0o700 });
    writeFileSync(homeLayout(home).configFile, config, { mode: 0o600 });
  }
  const start = performance.now();
  // GATEHOUSE_BENCH_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) profiles the daemon.
  const nodeArgs = [
    ...(process.env['GATEHOUSE_BENCH_NODE_ARGS'] ?? '').split(' ').filter(Boolean),
    ...extraNodeArgs,
  ];
  // --port 0: a bench daemon never takes the default port from (or gives way to) another daemon.
  const child = spawn(process.execPath, [...nodeArgs, CLI, 'serve', '--port', '0'], {
    // The environment `gatehouse start` gives the daemon (its allocator settings included).
    env: daemonEnvironment({
      ...process.env,
      ...benchDaemonVariables(),
      ...env,
      GATEHOUSE_HOME: home,
      GATEHOUSE_DEBUG: '',
    }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin.end();
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => {
    if (errors.length < 10_000) errors += chunk.toString();
  });
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(READY)) {
        child.stdout.off('data', onData);
        child.stdout.resume();
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`gatehouse serve exited with ${code}: ${errors}`)));
  });
  const readyMs = performance.now() - start;
  const layout = homeLayout(home);
  const info = JSON.parse(readFileSync(layout.gatewayJson, 'utf8')) as { url: string };
  const clients: GatewayClient[] = [];
  return {
    home,
    child,
    pid: child.pid!,
    url: info.url,
    readyMs,
    stderr: () => errors,
    async connect() {
      const { ticket } = await requestTicket(layout.controlSocket, 'interactive');
      const client = await GatewayClient.connect(info.url, ticket);
      clients.push(client);
      return client;
    },
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        await gone;
        clearTimeout(timer);
      }
      if (existingHome === undefined) rmSync(base, { recursive: true, force: true });
    },
  };
}

/**
 * GATEHOUSE_BENCH_DAEMON_ENV (`NAME=value NAME=value`): variables for the bench daemons only, e.g.
 * `MALLOC_MMAP_THRESHOLD_=65536` to measure the allocator's settings of an older build while the
 * bench's own process (the direct calls of the baseline) runs as before.
 */
function benchDaemonVariables(): NodeJS.ProcessEnv {
  const variables: NodeJS.ProcessEnv = {};
  for (const pair of (process.env['GATEHOUSE_BENCH_DAEMON_ENV'] ?? '').split(/\s+/).filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`GATEHOUSE_BENCH_DAEMON_ENV: "${pair}" is not NAME=value`);
    variables[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return variables;
}

/** Milliseconds from spawning `node -e ''` to its exit: the floor of any Node process's start. */
export function nodeSpawnMs(): Promise<number> {
  const start = performance.now();
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  return new Promise((resolve) => child.once('exit', () => resolve(performance.now() - start)));
}

/**
 * RSS of an idle bare node process (the floor any Node daemon starts from), in KiB: read, like a
 * daemon's idle figure, half a second after it says it runs. A fixed 300 ms from spawn read it
 * before it had started on a loaded machine (21 to 30 MiB against 39.4 once started, 2026-12-07).
 */
export async function bareNodeRssKiB(): Promise<number> {
  const child = spawn(process.execPath, ['-e', "setInterval(() => {}, 1000); process.stdout.write('up')"], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`bare node exited with ${code}`)));
  });
  child.stdout.resume();
  await sleep(500);
  const rss = rssKiB(child.pid!);
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await gone;
  return rss;
}

/** VmRSS of a process, in KiB (Linux). */
export function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]);
}

/** Creates `count` sessions over the given connections (round robin); returns their ids. */
export async function createSessions(
  clients: GatewayClient[],
  count: number,
  cwd: string,
  concurrency = 16,
): Promise<string[]> {
  const ids: string[] = new Array<string>(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const created = await clients[i % clients.length]!.call<{ session_id: string }>('session.create', {
        cwd,
      });
      ids[i] = created.session_id;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return ids;
}

/**
 * Routes `turn.complete` notifications to whoever waits for that admission, so many sessions can
 * share one connection. Completions that arrive before their waiter (a fast turn beats the submit
 * reply) are kept until claimed.
 */
export class CompletionRouter {
  private readonly waiting = new Map<string, () => void>();
  private readonly early = new Set<string>();

  constructor(client: GatewayClient) {
    client.onNotification((n: Notification) => {
      if (n.method !== 'session.event') return;
      const params = n.params as { event: { type: string; admission_id?: string } };
      if (params.event.type !== 'turn.complete' || !params.event.admission_id) return;
      const id = params.event.admission_id;
      const resolve = this.waiting.get(id);
      if (resolve) {
        this.waiting.delete(id);
        resolve();
      } else {
        this.early.add(id);
      }
    });
  }

  completion(admissionId: string): Promise<void> {
    if (this.early.delete(admissionId)) return Promise.resolve();
    return new Promise((resolve) => this.waiting.set(admissionId, resolve));
  }
}

/** CPU time (user + system) a process has used so far, in milliseconds (Linux, /proc/<pid>/stat). */
/**
 * CPU ms of a process's main thread (its thread id is its pid) and of all its other threads
 * together (V8's platform threads for GC and compilation, libuv's pool, worker threads).
 */
export function threadCpuMs(pid: number): { main: number; others: number } {
  let main = 0;
  let others = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let ms: number;
    try {
      ms = ticksMs(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'));
    } catch {
      continue; // the thread ended meanwhile
    }
    if (Number(tid) === pid) main += ms;
    else others += ms;
  }
  return { main, others };
}

/** utime + stime of a /proc stat line, in ms. */
function ticksMs(stat: string): number {
  // Fields after the parenthesised command name; utime and stime are the 12th and 13th of them.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ is 100 on Linux
}

export function cpuMs(pid: number): number {
  return ticksMs(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

/**
 * The demo model as a process of its own (`gatehouse demo-model`), like a real provider: the
 * daemon's model calls and the bench's direct calls both cross a process boundary to reach it.
 */
export async function startChildDemoModel(): Promise<{
  baseUrl: string;
  pid: number;
  close(): Promise<void>;
}> {
  requireBuild();
  const child = spawn(process.execPath, [CLI, 'demo-model', '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const baseUrl = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stdout.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /listening at (\S+)/.exec(seen);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`gatehouse demo-model exited with ${code}`)));
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return {
    baseUrl,
    pid: child.pid!,
    async close() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
