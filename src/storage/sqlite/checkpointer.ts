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
  /** Stops the thread (after its current checkpoint); the last user's release does this. */
  release(): Promise<void>;
}

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

interface Shared {
  checkpointer: Checkpointer;
  users: number;
}

const running = new Map<string, Shared>();

/** The background checkpointer of `file`, started on first use. */
export function acquireCheckpointer(file: string, options: { intervalMs?: number } = {}): Checkpointer {
  const shared = running.get(file);
  if (shared) {
    shared.users++;
    return shared.checkpointer;
  }
  const entry: Shared = { checkpointer: start(file, options.intervalMs ?? 100), users: 1 };
  running.set(file, entry);
  return entry.checkpointer;
}

function start(file: string, intervalMs: number): Checkpointer {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { file, intervalMs, sqlite: createRequire(import.meta.url).resolve('better-sqlite3') },
  });
  // The daemon never waits for this thread to exit.
  worker.unref();
  const waiting = new Map<number, { resolve(r: CheckpointResult): void; reject(e: Error): void }>();
  let nextId = 1;
  const stats: Checkpointer['stats'] = { checkpoints: 0, failures: 0, last: null };
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  const failAll = (error: Error) => {
    for (const w of waiting.values()) w.reject(error);
    waiting.clear();
  };
  worker.on('message', (reply: Reply) => {
    const w = reply.id === null ? undefined : waiting.get(reply.id);
    if (reply.id !== null) waiting.delete(reply.id);
    if (reply.ok) {
      const result = { log: reply.log ?? 0, checkpointed: reply.checkpointed ?? 0 };
      stats.checkpoints++;
      stats.last = result;
      w?.resolve(result);
    } else {
      // A failed checkpoint loses nothing (the log keeps every frame); the next one tries again.
      stats.failures++;
      w?.reject(new Error(`checkpoint of ${file} failed: ${reply.message ?? 'unknown error'}`));
    }
  });
  worker.on('error', (error) => failAll(error));
  const stoppedError = () => new Error(`the checkpointer of ${file} has stopped`);
  let stopped = false;
  void exited.then(() => {
    stopped = true;
    failAll(stoppedError());
  });
  return {
    stats,
    checkpoint: () =>
      new Promise<CheckpointResult>((resolve, reject) => {
        if (stopped) {
          reject(stoppedError());
          return;
        }
        const id = nextId++;
        waiting.set(id, { resolve, reject });
        worker.postMessage({ kind: 'checkpoint', id });
      }),
    release: async () => {
      const shared = running.get(file);
      if (shared && --shared.users > 0) return;
      running.delete(file);
      // Held again while it stops, or an exiting daemon would not wait for it to finish.
      worker.ref();
      worker.postMessage({ kind: 'stop' });
      await exited;
    },
  };
}
