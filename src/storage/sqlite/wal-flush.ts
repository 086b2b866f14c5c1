/**
 * Making a WAL commit durable without holding the event loop (LOC-8, STO-1).
 *
 * With synchronous=FULL, SQLite calls fsync on the write-ahead log inside COMMIT, and better-sqlite3
 * runs COMMIT on the JavaScript thread: for the whole flush the daemon can neither read a frame nor
 * answer one. A group commit instead commits with synchronous=NORMAL — the same WAL frames written
 * in the same order, minus that one fsync — and then flushes the log here, on libuv's thread pool,
 * before any caller is told. The guarantee is FULL's: nothing is acknowledged before the log holding
 * it is on disk. What NORMAL alone gives up (the last commits on power loss) is exactly what the
 * callers are still waiting for.
 *
 * fdatasync works on the file, not on the descriptor that wrote it, so our own descriptor of the
 * `-wal` file flushes the pages SQLite wrote through its own. The log keeps its inode for as long as
 * the connection is open (SQLite truncates or rewinds it, and deletes it only when the last
 * connection closes), which is why the descriptor is opened once and closed with the group.
 */
import fs from 'node:fs';

export interface WalFlush {
  /** Resolves once every WAL frame written before the call is on disk. */
  flush(): Promise<void>;
  /** The same on the calling thread (flush-policy.ts says when that is cheaper). */
  flushSync(): void;
  close(): void;
}

/** The `-wal` file of the database at `file`, flushed with fdatasync (on the thread pool, or inline). */
export function walFileFlush(file: string): WalFlush {
  let fd: number | undefined;
  // Opened on first use: the log exists once a write transaction has committed.
  const log = () => (fd ??= fs.openSync(`${file}-wal`, 'r+'));
  return {
    flush: () =>
      new Promise<void>((resolve, reject) => {
        // A failure to open the log throws inside the executor, which rejects the promise.
        fs.fdatasync(log(), (error) => (error ? reject(error) : resolve()));
      }),
    flushSync: () => fs.fdatasyncSync(log()),
    close: () => {
      if (fd !== undefined) fs.closeSync(fd);
      fd = undefined;
    },
  };
}
