/**
 * Checkpoints the write-ahead log on a thread of its own.
 *
 * SQLite copies the log back into the database file at a checkpoint, and by default the connection
 * whose commit crosses the threshold does it inside that COMMIT — on the daemon's event loop, once
 * every few thousand pages: a copy of every changed page plus an fsync of the database file, while no
 * request is read and no answer sent. Measured on the admission path, that was about a fifth of the
 * SQLite time per admission. Here a worker thread with its own connection runs a PASSIVE checkpoint
 * every `intervalMs`: PASSIVE never blocks the writer (it copies what no reader still needs and
 * leaves the rest for next time), and SQLite rewinds the log at the next write once all of it is
 * copied. The daemon's connection keeps its own automatic checkpoint only as a safety net, at a much
 * higher threshold (BACKGROUND_SAFETY_PAGES), should this thread ever fall behind or die.
 *
 * The thread is started only while there is something to copy (issue 32): a worker thread is a
 * V8 isolate of its own, about 12 MiB of an idle daemon's memory. The connections' row changes are
 * read on the event loop every `intervalMs` (`total_changes()`, a few microseconds); the thread is
 * started once `burstRows` rows changed, or any change has waited `lingerMs` (a minute: the log is
 * as durable as the database, a checkpoint only keeps it short), and it stops once no
 * row changed for `idleMs` (every change by then checkpointed by its timer). So a daemon that only
 * started (its start-up writes a few rows) holds no thread, and a busy one keeps it running.
 *
 * One checkpointer per database file, shared by every connection of the process that asks for it.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** The daemon connection's own checkpoint threshold while a background one runs (~64 MiB of log). */
export const BACKGROUND_SAFETY_PAGES = 16_000;

export interface CheckpointResult {
  /** Frames in the log, and how many of them the checkpoint had copied into the database. */
  log: number;
  checkpointed: number;
}

export interface Checkpointer {
  /** Checkpoints done, and the last result. */
  readonly stats: { checkpoints: number; failures: number; last: CheckpointResult | null };
  /** Runs one checkpoint now; resolves with its result. */
  checkpoint(): Promise<CheckpointResult>;
  /** Whether the thread is running now (it sleeps while nothing changes). */
  readonly running: boolean;
  /** Stops the thread (after its current checkpoint); the last user's release does this. */
  release(): Promise<void>;
}

/** When the thread runs: see the file's comment. */
export interface CheckpointerOptions {
  /** How often the thread checkpoints, and how often the changes are read (ms). */
  intervalMs?: number;
  /** Row changes that start the thread at once. */
  burstRows?: number;
  /** How long a smaller change waits before the thread starts for it (ms). */
  lingerMs?: number;
  /** How long the thread runs on with no row changed before it stops (ms). */
  idleMs?: number;
}

export const CHECKPOINTER_DEFAULTS: Required<CheckpointerOptions> = {
  intervalMs: 100,
  burstRows: 256,
  lingerMs: 60_000,
  idleMs: 30_000,
};

/** The rows a connection has changed so far (SQLite's total_changes()): how the checkpointer sees work. */
export type ChangeCounter = () => number;

// CommonJS, evaluated in the worker: the thread needs no file of its own next to compiled code.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.sqlite);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('synchronous = FULL');
const run = (id) => {
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ id, ok: true, log: r.log, checkpointed: r.checkpointed });
  } catch (error) {
    parentPort.postMessage({ id, ok: false, message: String((error && error.message) || error) });
  }
};
const timer = setInterval(() => run(null), workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message.kind === 'checkpoint') run(message.id);
  if (message.kind === 'stop') {
    clearInterval(timer);
    // What changed since the last tick is copied before the thread sleeps, however short it ran.
    run(null);
    db.close();
    parentPort.close();
  }
});
`;

interface Reply {
  id: number | null;
  ok: boolean;
  log?: number;
  checkpointed?: number;
  message?: string;
}

interface Waiter {
  resolve(r: CheckpointResult): void;
  reject(e: Error): void;
}

interface Shared {
  checkpointer: SleepingCheckpointer;
  users: number;
}

const running = new Map<string, Shared>();

/**
 * The background checkpointer of `file`, shared by every connection of it that asks; `changes`
 * counts the row changes of the asking connection.
 */
export function acquireCheckpointer(
  file: string,
  changes: ChangeCounter,
  options: CheckpointerOptions = {},
): Checkpointer {
  const shared = running.get(file);
  if (shared) {
    shared.users++;
    shared.checkpointer.count(changes);
    return shared.checkpointer;
  }
  const checkpointer = new SleepingCheckpointer(file, { ...CHECKPOINTER_DEFAULTS, ...options }, () => {
    const entry = running.get(file);
    if (entry && --entry.users > 0) return false;
    running.delete(file);
    return true;
  });
  checkpointer.count(changes);
  running.set(file, { checkpointer, users: 1 });
  return checkpointer;
}

/**
 * States: `sleeping` (no thread), `running` (the thread checkpoints every interval), `stopping` (it
 * was told to stop and has not exited yet), `released` (the last user let go, or the thread died
 * unasked: the connections' own safety net checkpoints from then on).
 */
type State = 'sleeping' | 'running' | 'stopping' | 'released';

class SleepingCheckpointer implements Checkpointer {
  readonly stats: Checkpointer['stats'] = { checkpoints: 0, failures: 0, last: null };
  private state: State = 'sleeping';
  private worker: Worker | null = null;
  private exited: Promise<void> = Promise.resolve();
  private readonly waiting = new Map<number, Waiter>();
  /** Asked for while the thread was stopping: sent once it runs again. */
  private readonly deferred: number[] = [];
  private nextId = 1;
  /** Each connection's counter, and what it read last. */
  private readonly seen = new Map<ChangeCounter, number>();
  /** Rows changed since the thread last ran, and when the first of them was seen. */
  private pendingRows = 0;
  private pendingSince: number | null = null;
  private lastChangeAt = 0;
  private readonly watch: NodeJS.Timeout;

  constructor(
    private readonly file: string,
    private readonly options: Required<CheckpointerOptions>,
    /** Gives up one user's share; true when it was the last. */
    private readonly releaseShare: () => boolean,
  ) {
    this.watch = setInterval(() => this.look(Date.now()), options.intervalMs);
    // The daemon never waits for this timer.
    this.watch.unref();
  }

  get running(): boolean {
    return this.state === 'running';
  }

  checkpoint(): Promise<CheckpointResult> {
    return new Promise<CheckpointResult>((resolve, reject) => {
      if (this.state === 'released') {
        reject(this.stoppedError());
        return;
      }
      const id = this.nextId++;
      this.waiting.set(id, { resolve, reject });
      this.lastChangeAt = Date.now();
      if (this.state === 'stopping') this.deferred.push(id);
      else this.send(id);
    });
  }

  /** Adds a connection whose row changes count as work. */
  count(changes: ChangeCounter): void {
    this.seen.set(changes, changes());
  }

  async release(): Promise<void> {
    if (!this.releaseShare()) return;
    clearInterval(this.watch);
    const stop = this.state === 'running';
    this.state = 'released';
    if (stop) this.stopThread();
    await this.exited;
    this.failAll(this.stoppedError());
  }

  /** Reads the changes and decides whether the thread should start or stop. */
  private look(now: number): void {
    const fresh = this.freshChanges();
    if (fresh > 0) this.lastChangeAt = now;
    if (this.state === 'sleeping') {
      if (fresh > 0) {
        this.pendingRows += fresh;
        this.pendingSince ??= now;
      }
      const due =
        this.pendingRows >= this.options.burstRows ||
        (this.pendingSince !== null && now - this.pendingSince >= this.options.lingerMs);
      if (due) this.startThread();
    } else if (this.state === 'running') {
      if (now - this.lastChangeAt >= this.options.idleMs && this.waiting.size === 0) this.stopThread();
    }
  }

  /** Rows changed since the last look, over every connection (a closed one counts nothing). */
  private freshChanges(): number {
    let fresh = 0;
    for (const [count, last] of this.seen) {
      const now = count();
      fresh += Math.max(0, now - last);
      this.seen.set(count, now);
    }
    return fresh;
  }

  private send(id: number): void {
    if (this.state === 'sleeping') this.startThread();
    this.worker!.postMessage({ kind: 'checkpoint', id });
  }

  private startThread(): void {
    this.pendingRows = 0;
    this.pendingSince = null;
    this.lastChangeAt = Date.now();
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        file: this.file,
        intervalMs: this.options.intervalMs,
        sqlite: createRequire(import.meta.url).resolve('better-sqlite3'),
      },
    });
    // The daemon never waits for this thread to exit.
    worker.unref();
    this.worker = worker;
    this.state = 'running';
    this.exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.on('message', (reply: Reply) => this.receive(reply));
    worker.on('error', (error) => this.failAll(error));
    void this.exited.then(() => this.onExit(worker));
  }

  private stopThread(): void {
    if (this.state !== 'released') this.state = 'stopping';
    // Held again while it stops, or an exiting daemon would not wait for it to finish.
    this.worker!.ref();
    this.worker!.postMessage({ kind: 'stop' });
  }

  private onExit(worker: Worker): void {
    if (this.worker !== worker) return;
    this.worker = null;
    if (this.state === 'stopping') {
      this.state = 'sleeping';
      for (const id of this.deferred.splice(0)) this.send(id);
      return;
    }
    // Exited unasked (or released): the connections' own checkpoints take over.
    if (this.state === 'running') {
      this.state = 'released';
      clearInterval(this.watch);
    }
    this.failAll(this.stoppedError());
  }

  private receive(reply: Reply): void {
    const w = reply.id === null ? undefined : this.waiting.get(reply.id);
    if (reply.id !== null) this.waiting.delete(reply.id);
    if (reply.ok) {
      const result = { log: reply.log ?? 0, checkpointed: reply.checkpointed ?? 0 };
      this.stats.checkpoints++;
      this.stats.last = result;
      w?.resolve(result);
    } else {
      // A failed checkpoint loses nothing (the log keeps every frame); the next one tries again.
      this.stats.failures++;
      w?.reject(new Error(`checkpoint of ${this.file} failed: ${reply.message ?? 'unknown error'}`));
    }
  }

  private failAll(error: Error): void {
    for (const w of this.waiting.values()) w.reject(error);
    this.waiting.clear();
    this.deferred.length = 0;
  }

  private stoppedError(): Error {
    return new Error(`the checkpointer of ${this.file} has stopped`);
  }
}
