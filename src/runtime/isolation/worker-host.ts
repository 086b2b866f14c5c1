/**
 * The daemon's side of safe mode (docs/tools.md, "Safe mode"): one isolated worker process per
 * session, started on demand at its first tool call and released after `idleMs` without one.
 *
 * A worker is a small state machine: `running` (it answers calls) → `stopped` (it exited, was
 * killed or released). Every way it can end settles the calls it held with a tool error that says
 * what happened and fails their turn (`worker_failed`): the result is stored, the turn settles
 * `failed`, and the daemon, and every other session, never notice; the session's next call starts a
 * fresh worker. A daemon shutdown is the exception: it stops the worker without failing the turn.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { ToolContext, ToolDefinition, ToolResult } from '../types.js';
import { TERMINAL_DEFAULTS } from '../tools/terminal.js';
import { toolEnvironment } from '../tools/env.js';
import {
  cgroupMembers,
  commandLauncher,
  killCgroupMembers,
  probeIsolation,
  removeDir,
  type IsolationSupport,
  type SafeModeLimits,
} from './limits.js';
import type { HookExecutor, HookRun } from '../hooks/run.js';
import { packageFile } from '../package-files.js';
import {
  ISOLATED_TOOLS,
  parseWorkerMessage,
  WORKER_HOOK,
  type HostMessage,
  type WorkerSettings,
} from './protocol.js';

/** How long past its own timeout a call may take before the worker counts as hung and is killed. */
const HANG_MARGIN_MS = 10_000;
/** Time an interrupted call has to answer before its worker is killed. */
const ABORT_GRACE_MS = 5_000;
/** Why a worker is stopped at daemon shutdown: the turn is not failed for it. */
const GATEWAY_STOP = 'was stopped with the gateway';
/** The `error.reason` of a turn whose worker crashed or hung. */
export const WORKER_FAILED = 'worker_failed';

export interface WorkerPoolOptions extends SafeModeLimits {
  /** Where workers get their private directories (owner-only). */
  runDir: string;
  /** A worker without calls for this long is released. */
  idleMs: number;
  /**
   * The tool environment (tools/env.ts, with `safe_mode.env` passed through): the worker and its
   * commands get it with a HOME and TMPDIR of the worker's own. The allow-list over the daemon's by default.
   */
  env?: Readonly<Record<string, string>>;
}

interface PendingCall {
  context: ToolContext;
  resolve(result: ToolResult): void;
  /** Runs while the call works; paused while a human is asked (that wait has its own timeout). */
  deadline: NodeJS.Timeout | undefined;
  arm(): void;
}

/**
 * The worker's own entry, a separate bundle entry point kept at its compiled path (scripts/bundle.js);
 * found from the package root because this code runs from a chunk, not from beside it.
 */
const workerMain = (): string => packageFile('dist', 'runtime', 'isolation', 'worker-main.js');

class IsolatedWorker {
  state: 'running' | 'stopped' = 'running';
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, PendingCall>();
  private nextCall = 1;
  private idle: NodeJS.Timeout | undefined;
  /** Set when we stop the worker ourselves, so the calls are told why. */
  private stopReason: string | null = null;

  constructor(
    readonly dir: string,
    readonly cgroup: string | null,
    netLauncher: readonly string[],
    settings: WorkerSettings,
    env: Record<string, string>,
    private readonly idleMs: number,
    private readonly onStopped: (worker: IsolatedWorker) => void,
  ) {
    const argv = [...netLauncher, process.execPath, workerMain(), JSON.stringify(settings)];
    this.child = spawn(argv[0]!, argv.slice(1), {
      cwd: dir,
      env,
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      serialization: 'json',
    });
    // Before it is sent any call, so everything it starts is counted (unshare execs: same pid).
    if (cgroup && this.child.pid !== undefined) {
      fs.writeFileSync(path.join(cgroup, 'cgroup.procs'), String(this.child.pid));
    }
    this.child.on('message', (raw) => this.receive(raw));
    this.child.on('error', (error) => this.stopped(`could not start: ${error.message}`));
    this.child.on('exit', (code, signal) =>
      this.stopped(signal ? `was killed by ${signal}` : `exited with code ${code}`),
    );
    this.armIdle();
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  run(tool: string, args: Record<string, unknown>, context: ToolContext): Promise<ToolResult> {
    if (this.state !== 'running') return Promise.resolve(workerGone('is not running'));
    clearTimeout(this.idle);
    const call = this.nextCall++;
    return new Promise<ToolResult>((resolve) => {
      const entry: PendingCall = {
        context,
        resolve,
        deadline: undefined,
        arm: () => {
          clearTimeout(entry.deadline);
          entry.deadline = setTimeout(
            () => this.kill(`did not answer within ${Math.round(limitMs(args) / 1000)} s`),
            limitMs(args),
          );
        },
      };
      entry.arm();
      this.pending.set(call, entry);
      const onAbort = (): void => {
        this.send({ type: 'abort', call });
        setTimeout(() => {
          if (this.pending.has(call)) this.kill('did not stop within the interrupt grace period');
        }, ABORT_GRACE_MS).unref();
      };
      if (context.signal.aborted) onAbort();
      else context.signal.addEventListener('abort', onAbort, { once: true });
      this.send({
        type: 'run',
        call,
        tool,
        args,
        cwd: context.cwd,
        session_id: context.sessionId,
        admission_id: context.admissionId ?? null,
        execution_generation: context.executionGeneration,
        yolo: context.yolo,
      });
    });
  }

  /** Stops the worker (and everything it started) for good. */
  kill(reason: string): void {
    if (this.state === 'stopped') return;
    this.stopReason ??= reason;
    this.child.kill('SIGKILL');
    if (this.cgroup) killCgroupMembers(this.cgroup);
  }

  private send(message: HostMessage): void {
    if (this.state !== 'running' || !this.child.connected) return;
    this.child.send(message, (error) => {
      if (error) this.kill(`could not be reached (${error.message})`);
    });
  }

  private receive(raw: unknown): void {
    const message = parseWorkerMessage(raw);
    if (message === null) return this.kill('sent a malformed message');
    const entry = this.pending.get(message.call);
    if (!entry) return;
    switch (message.type) {
      case 'progress':
        entry.context.reportProgress?.(message.progress);
        return;
      case 'approval.ask':
        return this.relay(entry, message.call, entry.context.requestApproval(message.request), (outcome) => ({
          type: 'approval.answer',
          call: message.call,
          ask: message.ask,
          outcome,
        }));
      case 'clarify.ask':
        return this.relay(entry, message.call, entry.context.askClarify(message.request), (outcome) => ({
          type: 'clarify.answer',
          call: message.call,
          ask: message.ask,
          outcome,
        }));
      case 'started.ask':
        return this.relay(
          entry,
          message.call,
          entry.context.markStarted().then(
            () => null,
            (error: unknown) => (error instanceof Error ? error.message : String(error)),
          ),
          (error) => ({ type: 'started.answer', call: message.call, ask: message.ask, error }),
        );
      case 'result':
        this.settle(message.call, message.result);
        if (this.pending.size === 0) this.armIdle();
        return;
    }
  }

  /** A human is asked for the worker: its deadline waits, and runs again once the answer goes back. */
  private relay<T>(
    entry: PendingCall,
    call: number,
    question: Promise<T>,
    answer: (outcome: T) => HostMessage,
  ): void {
    clearTimeout(entry.deadline);
    void question.then((outcome) => {
      if (this.pending.has(call)) entry.arm();
      this.send(answer(outcome));
    });
  }

  private settle(call: number, result: ToolResult): void {
    const entry = this.pending.get(call);
    if (!entry) return;
    this.pending.delete(call);
    clearTimeout(entry.deadline);
    entry.resolve(result);
  }

  private armIdle(): void {
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.kill('was released after being idle'), this.idleMs);
    this.idle.unref();
  }

  private stopped(what: string): void {
    if (this.state === 'stopped') return;
    this.state = 'stopped';
    clearTimeout(this.idle);
    const why = this.stopReason ?? what;
    const gone = workerGone(why, why !== GATEWAY_STOP);
    for (const call of [...this.pending.keys()]) this.settle(call, gone);
    if (this.cgroup) {
      killCgroupMembers(this.cgroup);
      removeDir(this.cgroup);
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
    this.onStopped(this);
  }
}

function workerGone(why: string, failTurn = false): ToolResult {
  const content =
    `The isolated worker that runs this session's tools ${why}; this tool call did not complete and ` +
    'its effect is unknown. The next tool call starts a fresh worker.';
  if (!failTurn) return { content, isError: true };
  const message =
    `The isolated worker that runs this session's tools ${why}, so this turn failed; ` +
    'the effect of its last tool call is unknown. The next turn starts a fresh worker.';
  return { content, isError: true, failTurn: { reason: WORKER_FAILED, message } };
}

function timeoutS(args: Record<string, unknown>): number {
  const requested =
    typeof args['timeout_s'] === 'number' ? args['timeout_s'] : TERMINAL_DEFAULTS.defaultTimeoutS;
  return Math.min(requested, TERMINAL_DEFAULTS.maxTimeoutS);
}

/** A call's own time (the terminal's timeout and kill grace), plus a margin. */
function limitMs(args: Record<string, unknown>): number {
  return timeoutS(args) * 1000 + TERMINAL_DEFAULTS.killGraceMs + HANG_MARGIN_MS;
}

/** The per-session workers of one daemon. */
export class WorkerPool {
  private readonly workers = new Map<string, IsolatedWorker>();
  private support: IsolationSupport | null = null;
  private serial = 0;
  /** The directories and cgroups of isolated MCP servers still running (removed at close). */
  private readonly rooms = new Set<string>();
  private readonly roomCgroups = new Set<string>();

  constructor(private readonly options: WorkerPoolOptions) {}

  /** What this host can enforce (probed once). */
  probe(): IsolationSupport {
    this.support ??= probeIsolation(this.options);
    return this.support;
  }

  /** The live worker of a session, started now when it has none. */
  workerFor(sessionId: string): IsolatedWorker {
    const live = this.workers.get(sessionId);
    if (live && live.state === 'running') return live;
    const { support, dir, cgroup } = this.room(sessionId);
    const worker = new IsolatedWorker(
      dir,
      cgroup,
      support.netLauncher,
      { launcher: commandLauncher(this.options, support.processLimit), cgroup },
      this.environment(dir),
      this.options.idleMs,
      (w) => {
        if (this.workers.get(sessionId) === w) this.workers.delete(sessionId);
      },
    );
    this.workers.set(sessionId, worker);
    return worker;
  }

  /**
   * A private directory (with its own `tmp`) and, where the host has one, a pids cgroup: what a
   * worker, or a safe-mode session's MCP server, runs in.
   */
  private room(sessionId: string): {
    support: Extract<IsolationSupport, { ok: true }>;
    dir: string;
    cgroup: string | null;
  } {
    const support = this.probe();
    if (!support.ok) throw new Error(`safe mode is not available on this host: ${support.reason}`);
    const name = `${sessionId.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 40)}-${process.pid}-${++this.serial}`;
    const root = path.join(this.options.runDir, 'workers');
    fs.mkdirSync(root, { recursive: true, mode: 0o700 });
    const dir = path.join(root, name);
    fs.mkdirSync(path.join(dir, 'tmp'), { recursive: true, mode: 0o700 });
    let cgroup: string | null = null;
    if (support.processLimit.kind === 'cgroup') {
      cgroup = path.join(support.processLimit.parent, `gatehouse-${name}`);
      fs.mkdirSync(cgroup);
      fs.writeFileSync(path.join(cgroup, 'pids.max'), String(this.options.processes), { flag: 'r+' });
    }
    return { support, dir, cgroup };
  }

  /**
   * A safe-mode session's stdio MCP server, launched inside the same isolation as its worker: its
   * own HOME and TMPDIR, no network where the host allows, the rlimits on the server process, and a
   * pids cgroup it joins before it execs (so everything it starts is counted and stopped with it).
   * The server's own `env` is added to the safe-mode environment.
   */
  isolatedLaunch(
    sessionId: string,
    launch: { command: string; args: string[]; env: Record<string, string>; cwd: string },
    serverEnv: Readonly<Record<string, string>>,
  ): { command: string; args: string[]; env: Record<string, string>; cwd: string; release(): void } {
    const { support, dir, cgroup } = this.room(sessionId);
    const argv = [
      ...(cgroup ? ['sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup] : []),
      ...support.netLauncher,
      ...commandLauncher(this.options, support.processLimit),
      launch.command,
      ...launch.args,
    ];
    this.rooms.add(dir);
    if (cgroup) this.roomCgroups.add(cgroup);
    let released = false;
    return {
      command: argv[0]!,
      args: argv.slice(1),
      env: { ...this.environment(dir), PWD: launch.cwd, ...serverEnv },
      cwd: launch.cwd,
      release: () => {
        if (released) return;
        released = true;
        if (cgroup) {
          killCgroupMembers(cgroup);
          removeDir(cgroup);
          this.roomCgroups.delete(cgroup);
        }
        fs.rmSync(dir, { recursive: true, force: true });
        this.rooms.delete(dir);
      },
    };
  }

  /** The pid of a session's live worker (tests kill it), or null. */
  pidOf(sessionId: string): number | null {
    const worker = this.workers.get(sessionId);
    return worker?.state === 'running' ? (worker.pid ?? null) : null;
  }

  get size(): number {
    return this.workers.size;
  }

  /**
   * Every process in a live worker's pids cgroup: the worker and whatever its commands started,
   * orphaned or not (daemon/spawned-peer.ts refuses them at the gateway's doors).
   */
  cgroupMembers(): number[] {
    const pids: number[] = [];
    for (const worker of this.workers.values()) {
      if (!worker.cgroup) continue;
      try {
        const text = fs.readFileSync(path.join(worker.cgroup, 'cgroup.procs'), 'utf8');
        for (const line of text.split('\n')) if (line.trim() !== '') pids.push(Number(line));
      } catch {
        // Removed meanwhile.
      }
    }
    for (const cgroup of this.roomCgroups) pids.push(...cgroupMembers(cgroup));
    return pids;
  }

  /**
   * Stops every worker (daemon shutdown). Their directories and cgroups are removed now: the daemon
   * may exit before the workers' exit events arrive.
   */
  close(): void {
    for (const worker of [...this.workers.values()]) {
      worker.kill(GATEWAY_STOP);
      if (worker.cgroup) removeDir(worker.cgroup);
      fs.rmSync(worker.dir, { recursive: true, force: true });
    }
    for (const cgroup of this.roomCgroups) {
      killCgroupMembers(cgroup);
      removeDir(cgroup);
    }
    for (const dir of this.rooms) fs.rmSync(dir, { recursive: true, force: true });
    this.roomCgroups.clear();
    this.rooms.clear();
  }

  /** The tool environment, with a HOME and TMPDIR of the worker's own. */
  private environment(dir: string): Record<string, string> {
    const env = this.options.env ?? toolEnvironment(process.env);
    return { ...env, HOME: dir, TMPDIR: path.join(dir, 'tmp'), PWD: dir };
  }
}

/** The session's tools with every tool that touches the machine run by its worker instead. */
export function isolateTools(tools: readonly ToolDefinition[], pool: WorkerPool): ToolDefinition[] {
  return tools.map((tool) =>
    ISOLATED_TOOLS.includes(tool.name)
      ? { ...tool, run: (args, context) => pool.workerFor(context.sessionId).run(tool.name, args, context) }
      : tool,
  );
}

/** Runs a safe-mode session's hooks in its worker, inside the same isolation as its tools. */
export function hooksInWorker(pool: WorkerPool, sessionId: string): HookExecutor {
  return async (hook, input, options) => {
    const context: ToolContext = {
      cwd: input.cwd,
      signal: options.signal,
      sessionId,
      admissionId: input.admission_id ?? undefined,
      executionGeneration: 0,
      yolo: false,
      // A hook asks nobody anything.
      requestApproval: () => Promise.resolve({ kind: 'cancelled' }),
      askClarify: () => Promise.resolve({ kind: 'cancelled' }),
      markStarted: () => Promise.resolve(),
    };
    const result = await pool
      .workerFor(sessionId)
      .run(WORKER_HOOK, { hook, input, timeout_s: hook.timeout_s }, context);
    if (result.failTurn) return { kind: 'failed', message: result.failTurn.message };
    try {
      return JSON.parse(result.content) as HookRun;
    } catch {
      return { kind: 'failed', message: result.content };
    }
  };
}
