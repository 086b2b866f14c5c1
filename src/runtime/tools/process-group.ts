/**
 * Runs one shell command in its own process group and guarantees that, when the returned promise
 * settles, nothing from that group is still running: on a timeout or an abort the whole group gets
 * SIGTERM, then SIGKILL after a grace period; when the shell exits normally, anything it left
 * running in the background is stopped the same way (a tool call never leaves orphans behind).
 *
 * Output from stdout and stderr is combined in arrival order and capped: the head and the tail are
 * kept, and the middle is replaced by a marker that says how many bytes were dropped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

export interface RunOptions {
  command: string;
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  signal: AbortSignal;
  /** Output kept, in bytes (head + tail). */
  outputCapBytes: number;
  /** Between SIGTERM and SIGKILL. */
  killGraceMs: number;
  /** Written to the command's stdin, which is then closed. Absent: no stdin. */
  stdin?: string;
  /**
   * A program that sets up the process and then execs `bash -c command` in its place (the
   * isolated worker's `prlimit …`), so the group leader keeps its pid. Absent: bash itself.
   */
  launcher?: readonly string[];
  /** Every chunk of output as it arrives (before the cap), for live progress. */
  onOutput?: (chunk: Buffer) => void;
  /** Told once the command's process exists (spawned), before anything else happens to it. */
  onSpawn?: () => void;
}

export type Termination =
  | { kind: 'exited'; exitCode: number }
  | { kind: 'signalled'; signal: string }
  | { kind: 'timed_out' }
  | { kind: 'interrupted' }
  | { kind: 'spawn_failed'; message: string };

export interface RunResult {
  termination: Termination;
  output: string;
  droppedBytes: number;
  /** Background processes were still running when the shell exited and were stopped. */
  strayStopped: boolean;
}

/** Keeps the first and last halves of a byte stream, counting what falls between. */
class CappedOutput {
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  dropped = 0;

  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    const headRoom = Math.ceil(this.cap / 2) - this.headBytes;
    if (headRoom > 0) {
      const part = chunk.subarray(0, headRoom);
      this.head.push(part);
      this.headBytes += part.length;
      chunk = chunk.subarray(part.length);
    }
    if (chunk.length === 0) return;
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    const tailCap = Math.floor(this.cap / 2);
    while (this.tailBytes > tailCap) {
      const first = this.tail[0];
      if (first === undefined) break;
      const excess = this.tailBytes - tailCap;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailBytes -= first.length;
        this.dropped += first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailBytes -= excess;
        this.dropped += excess;
      }
    }
  }

  text(): string {
    const head = Buffer.concat(this.head).toString('utf8');
    const tail = Buffer.concat(this.tail).toString('utf8');
    if (this.dropped === 0) return head + tail;
    // ASCII only: one non-Latin-1 character (an ellipsis, say) would make V8 store the whole capped
    // output two bytes per character, in every copy the daemon keeps (agent cache, replay buffers).
    return `${head}\n[... output truncated: ${this.dropped} bytes dropped ...]\n${tail}`;
  }
}

/**
 * Does the group still have a running member? kill(-pgid, 0) also counts zombies, and where PID 1
 * does not reap orphans (some containers) a dead background child stays a zombie for good; on Linux
 * /proc tells the two apart, so we do not wait out the kill grace period for the dead.
 */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the parenthesised command name: state ppid pgrp …
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true;
    } catch {
      // The process ended while we looked.
    }
  }
  return false;
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone, which is what we want.
  }
}

let spawnHook: ((start: () => ChildProcess) => ChildProcess) | null = null;

/**
 * Wraps every spawn of this module (the crash tests' `tool.emfile` fault point, daemon/faults.ts,
 * makes one meet a full descriptor table). Null removes it.
 */
export function setSpawnHook(hook: ((start: () => ChildProcess) => ChildProcess) | null): void {
  spawnHook = hook;
}

/** The most sessions remembered; the oldest are forgotten first. */
const TOOL_SESSIONS_KEPT = 4096;
const toolSessions = new Set<number>();

function rememberToolSession(sid: number): void {
  toolSessions.add(sid);
  if (toolSessions.size > TOOL_SESSIONS_KEPT) toolSessions.delete(toolSessions.values().next().value!);
}

/**
 * The sessions commands were started in by this process (each leads one of its own: `detached`).
 * A process still in one is the gateway's even once re-parented to init (daemon/spawned-peer.ts).
 */
export function toolSessionIds(): ReadonlySet<number> {
  return toolSessions;
}

export function runInProcessGroup(options: RunOptions): Promise<RunResult> {
  return new Promise((resolve) => {
    const output = new CappedOutput(options.outputCapBytes);
    let reason: 'timed_out' | 'interrupted' | null = null;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let streamsClosed = false;
    let strayStopped = false;
    let settled = false;
    let killedHard = false;
    let killTimer: NodeJS.Timeout | undefined;
    let watch: NodeJS.Timeout | undefined;

    // --norc: bash reads ~/.bashrc even when not interactive if its stdin is a socket (it takes one
    // for a remote shell's connection), and a hook's stdin is Node's socketpair: the owner's rc file
    // would run first and could swallow the hook's input.
    const [program, ...args] = [...(options.launcher ?? []), 'bash', '--norc', '-c', options.command];
    let child: ChildProcess;
    try {
      const start = (): ChildProcess =>
        spawn(program, args, {
          cwd: options.cwd,
          env: options.env,
          detached: true,
          stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
        });
      child = spawnHook ? spawnHook(start) : start();
    } catch (error) {
      // Out of descriptors or processes: this call fails, the daemon goes on.
      resolve({
        termination: { kind: 'spawn_failed', message: (error as Error).message },
        output: '',
        droppedBytes: 0,
        strayStopped: false,
      });
      return;
    }
    const pgid = child.pid;
    if (pgid !== undefined) {
      rememberToolSession(pgid);
      options.onSpawn?.();
    }
    // A command that exits without reading its input must not fail the run (EPIPE).
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(options.stdin);

    const finish = (termination: Termination): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timeout);
      clearTimeout(killTimer);
      clearInterval(watch);
      options.signal.removeEventListener('abort', onAbort);
      // After SIGKILL a process that left the group may still hold the pipes; stop reading them.
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve({ termination, output: output.text(), droppedBytes: output.dropped, strayStopped });
    };

    /** SIGTERM now, SIGKILL after the grace period if any member is left. */
    const stopGroup = (): void => {
      if (pgid === undefined || killTimer !== undefined) return;
      signalGroup(pgid, 'SIGTERM');
      // Members that die of SIGTERM after the shell's exit and close events trigger nothing; look.
      watch = setInterval(maybeFinish, 25);
      killTimer = setTimeout(() => {
        signalGroup(pgid, 'SIGKILL');
        killedHard = true;
        maybeFinish();
      }, options.killGraceMs);
    };

    const maybeFinish = (): void => {
      if (exit === null || (!streamsClosed && !killedHard)) return;
      if (pgid !== undefined && !killedHard && groupAlive(pgid)) {
        // The shell is gone but something it started is still in the group.
        if (reason === null) strayStopped = true;
        stopGroup();
        return;
      }
      if (reason !== null) return finish({ kind: reason });
      if (exit.code !== null) return finish({ kind: 'exited', exitCode: exit.code });
      return finish({ kind: 'signalled', signal: exit.signal ?? 'unknown' });
    };

    const onAbort = (): void => {
      reason ??= 'interrupted';
      stopGroup();
    };
    const timeout = setTimeout(() => {
      reason ??= 'timed_out';
      stopGroup();
    }, options.timeoutMs);

    const take = (chunk: Buffer): void => {
      output.push(chunk);
      options.onOutput?.(chunk);
    };
    // Absent when the spawn failed early (EMFILE, ENFILE): the 'error' event below says so.
    child.stdout?.on('data', take);
    child.stderr?.on('data', take);
    child.on('error', (error) => finish({ kind: 'spawn_failed', message: error.message }));
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // A background child may hold the pipes open; don't wait on it before deciding.
      if (!streamsClosed && pgid !== undefined && groupAlive(pgid)) {
        if (reason === null) strayStopped = true;
        stopGroup();
      }
      maybeFinish();
    });
    child.on('close', () => {
      streamsClosed = true;
      maybeFinish();
    });
    if (options.signal.aborted) onAbort();
    else options.signal.addEventListener('abort', onAbort, { once: true });
  });
}
