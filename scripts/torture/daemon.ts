/**
 * The real daemon as a child process (`node dist/surfaces/cli/main.js serve`) in a home the harness
 * owns: started, connected to with real tickets, and killed for real.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { resolve } from 'node:path';
import { homeLayout, type HomeLayout } from '../../src/daemon/home.js';
import { requestTicket } from '../../src/surfaces/control/client.js';
import { GatewayClient } from '../../src/surfaces/client/rpc-client.js';

/** The built CLI; GATEHOUSE_TORTURE_CLI points a long run at a frozen copy while dist/ is rebuilt. */
export const CLI =
  process.env['GATEHOUSE_TORTURE_CLI'] ?? resolve(import.meta.dirname, '../../dist/surfaces/cli/main.js');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The daemon died before it was ready (an armed fault point can fire during recovery). */
export class EarlyExit extends Error {
  constructor(
    readonly exit: Exit,
    stderr: string,
  ) {
    super(`daemon exited (${exit.code ?? exit.signal}) before it was ready: ${stderr}`);
  }
}

/**
 * The daemons of one torture run that have not exited yet. A run that stops early (its test timed
 * out) must not leave one running beside later tests: `killAll` ends them, and every daemon still
 * running when this process exits is killed too.
 */
/** How long a daemon may take to print its ready line before the harness gives up on it. */
const START_TIMEOUT_MS = 90_000;

export class DaemonSet {
  readonly children = new Set<ChildProcess>();

  add(child: ChildProcess): void {
    this.children.add(child);
    everyDaemon.add(child);
    child.once('exit', () => {
      this.children.delete(child);
      everyDaemon.delete(child);
    });
  }

  killAll(): void {
    for (const child of this.children) killIfRunning(child);
  }
}

const everyDaemon = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of everyDaemon) killIfRunning(child);
});

function killIfRunning(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/**
 * Why the daemon with `pid` stopped itself, from the "gateway stopping after a failure" line of the
 * home's log (lines of earlier processes in the same home are passed over by their pid), or null.
 */
export function failureReasonInLog(logFile: string, pid: number | undefined): string | null {
  let text: string;
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return null;
  }
  for (const line of text.split('\n').reverse()) {
    if (!line.includes('gateway stopping after a failure')) continue;
    try {
      const entry = JSON.parse(line) as { pid?: unknown; reason?: unknown };
      if (entry.pid === pid) return String(entry.reason);
    } catch {
      // A line cut short by the writer: not this one.
    }
  }
  return null;
}

export class DaemonProcess {
  readonly layout: HomeLayout;
  readonly exited: Promise<Exit>;
  url = '';
  epoch = 0;
  /** Why it stopped itself, once its log said so (failureReason). */
  private stoppedFor: string | null = null;

  private constructor(
    readonly home: string,
    readonly child: ChildProcess,
  ) {
    this.layout = homeLayout(home);
    this.exited = new Promise((done) => child.once('exit', (code, signal) => done({ code, signal })));
  }

  /** Spawns `gatehouse serve` and resolves once it prints that it is ready. */
  static async start(
    home: string,
    env: NodeJS.ProcessEnv,
    log: WriteStream | null,
    owner?: DaemonSet,
  ): Promise<DaemonProcess> {
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: { ...process.env, GATEHOUSE_HOME: home, GATEHOUSE_DEBUG: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    (owner ?? new DaemonSet()).add(child);
    const daemon = new DaemonProcess(home, child);
    if (log) {
      child.stdout.pipe(log, { end: false });
      child.stderr.pipe(log, { end: false });
    }
    let errors = '';
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((ready, fail) => {
      let seen = '';
      child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
      child.stdout.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes('Gatehouse is ready at')) ready();
      });
      void daemon.exited.then((e) => fail(new EarlyExit(e, errors.slice(-2000))));
      // A start that never ends would otherwise hold the run until its test's own timeout, with
      // nothing to say where it stood: fail it, with what the daemon wrote.
      timer = setTimeout(() => {
        killIfRunning(child);
        fail(
          new Error(
            `the daemon (pid ${child.pid}) printed no ready line within ${START_TIMEOUT_MS / 1000} s; ` +
              `its stdout: ${JSON.stringify(seen.slice(-1000))}; its stderr: ${JSON.stringify(errors.slice(-2000))}`,
          ),
        );
      }, START_TIMEOUT_MS);
    }).finally(() => clearTimeout(timer));
    let info: { url: string; epoch: number };
    try {
      info = JSON.parse(readFileSync(daemon.layout.gatewayJson, 'utf8')) as typeof info;
    } catch (error) {
      // Ready, then stopped before it could be read (a cluster instance that failed at once).
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      throw new EarlyExit(await daemon.exited, errors.slice(-2000));
    }
    daemon.url = info.url;
    daemon.epoch = info.epoch;
    return daemon;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * Why this process stopped itself, from its log's "gateway stopping after a failure" line
   * (lines of earlier processes in the same home are passed over by their pid), or null. Once
   * found it is kept: the harness asks often (every serving check), and the line never changes.
   */
  failureReason(): string | null {
    this.stoppedFor ??= failureReasonInLog(this.layout.logFile, this.child.pid);
    return this.stoppedFor;
  }

  async connect(): Promise<GatewayClient> {
    const { ticket } = await requestTicket(this.layout.controlSocket, 'interactive');
    return GatewayClient.connect(this.url, ticket);
  }

  async kill(): Promise<Exit> {
    if (this.alive) this.child.kill('SIGKILL');
    return this.exited;
  }

  async stop(): Promise<Exit> {
    if (this.alive) this.child.kill('SIGTERM');
    return this.exited;
  }
}

export function openLog(file: string): WriteStream {
  return createWriteStream(file, { flags: 'a' });
}
