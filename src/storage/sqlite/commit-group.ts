/**
 * Group commit on SQLite (LOC-8): store operations queued together run in ONE IMMEDIATE transaction,
 * so one flush of the write-ahead log makes all of them durable; each caller's promise settles only
 * after that flush.
 *
 * The flush is pipelined (see wal-flush.ts): a batch commits with synchronous=NORMAL and waits for an
 * fdatasync of the log on the thread pool, while the event loop goes on reading requests. At most one
 * flush is in flight. Operations queued while it runs gather, and commit as one batch when it ends;
 * with no flush in flight an operation commits at once (after the code already running), so under
 * load one flush acknowledges many callers across many sessions, and an idle gateway's turn waits for
 * no batching window. Batches committed during a flush wait for the next one. A batch that wrote nothing
 * needs no flush of its own, only the one covering what it may have read.
 *
 * Where a flush costs less than the trip to the thread pool (tmpfs, a drive that answers flushes at
 * once), it runs on the calling thread instead; flush-policy.ts decides from the measured cost. (On a
 * real disk, flushing a lone operation inline whenever the gateway seemed quiet was measured: about
 * 3% off a single turn's latency, about 10% off the throughput of 8 concurrent conversations.)
 *
 * A flush that fails leaves the log's state on disk unknown, so the group refuses every later
 * operation (storage_unavailable) until the daemon is restarted and SQLite recovers the log, rather
 * than acknowledge what may be lost.
 *
 * A transaction runs on the event loop (better-sqlite3 is synchronous), so a batch is also bounded in
 * time (issue 32 aim 3): once its operations have run `sliceUs`, it commits with what it has, and the
 * rest of the queue waits for the loop's next turn (a flush in flight or not), so that other sessions'
 * requests, replies and timers are served in between. Fifty sessions' turns gathered behind one flush
 * had made transactions of 30–50 operations, each holding the loop 100–200 ms of CPU under load.
 * Splitting changes no guarantee: every operation still commits whole, in queue order, and is
 * acknowledged only after a flush that covers it.
 *
 * Operations almost never fail, so a batch first runs them plainly. If one throws, that attempt is
 * rolled back whole and the batch runs again with each operation in its own savepoint: the one that
 * throws rolls back alone and rejects alone, while the others commit. (Operations are pure database
 * work, so running them again is safe.) If SQLite aborts the whole transaction (disk full, I/O
 * error), every operation of the batch is rejected — none of them was written. Every outcome, a
 * rejection too, is delivered only after the flush, so no caller acts on a row that may not survive.
 *
 * One exception, asked for by name (runLazily): an operation whose commit nothing acknowledged or
 * executed depends on until some later durable commit (a turn's claim: only the model request
 * follows it before the next flush). A round made of such operations alone is answered once
 * committed, its log frames left for the next flush, which covers them as it covers every frame
 * written before it (the log is flushed whole, and recovery keeps only an unbroken prefix of it).
 * Until that flush, every other round is flushed even if it wrote nothing, so no ordinary caller is
 * answered on the strength of a lazy commit. docs/decisions.md ("The claim's commit") has the argument.
 */
import { performance } from 'node:perf_hooks';
import { StorageUnavailableError } from '../../domain/errors.js';
import { asStorageUnavailable, tx } from './actions-common.js';
import type { SqliteDatabase } from './database.js';
import { atSynchronousNormal, savepoint, statement } from './statements.js';
import { chooseFlushPlace, FIRST_FLUSH, recordFlush, type FlushHistory } from './flush-policy.js';
import { walFileFlush, type WalFlush } from './wal-flush.js';

interface Queued {
  op: () => unknown;
  /** runLazily: may be answered before the log holding it is flushed. */
  lazy: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** A committed batch waiting for the flush that makes it durable. */
interface Committed {
  batch: Queued[];
  outcomes: Outcome[];
  /** False when the batch changed no row: it waits only for the flush of what it may have read. */
  wrote: boolean;
  /** Every operation of the batch was run lazily (runLazily). */
  lazy: boolean;
  /** When its transaction began (the group's microsecond clock). */
  startedUs: number;
}

/** The longest one transaction of the group runs operations before it commits, in microseconds. */
export const SLICE_US = 10_000;

export interface CommitGroupOptions {
  /** Most operations in one transaction. */
  maxBatch?: number;
  /** Microseconds of operations after which a transaction commits with those run so far (SLICE_US). */
  sliceUs?: number;
  /**
   * How commits are made durable. Default: the connection's `-wal` file flushed on the thread pool;
   * null (and for in-memory or non-WAL databases) leaves it to synchronous=FULL inside COMMIT.
   */
  flush?: WalFlush | null;
  /** Where flushes run: measured (default), or always on the thread pool (tests of the pipeline). */
  flushPlace?: 'measured' | 'pool';
  /** Microsecond clock for timing inline flushes (tests pass their own). */
  clockUs?: () => number;
}

const groups = new WeakMap<SqliteDatabase, CommitGroup>();

/** Thrown out of a plain attempt to roll it back whole; never seen by a caller. */
const OPERATION_FAILED = new Error('an operation of the batch failed');

export class CommitGroup {
  /** The connection's shared group: every store on one connection commits in the same batches. */
  static of(db: SqliteDatabase): CommitGroup {
    let group = groups.get(db);
    if (!group) {
      group = new CommitGroup(db);
      groups.set(db, group);
    }
    return group;
  }

  /** Closes the connection's group, if it has one, once its last flush is done. */
  static async closeOf(db: SqliteDatabase): Promise<void> {
    const group = groups.get(db);
    groups.delete(db);
    await group?.close();
  }

  private queue: Queued[] = [];
  private scheduled = false;
  private readonly maxBatch: number;
  /** Microseconds of operations after which a transaction commits with those run so far. */
  sliceUs: number;
  private readonly walFlush: WalFlush | null;
  private unflushed: Committed[] = [];
  private flushing: Promise<void> | null = null;
  private failure: StorageUnavailableError | null = null;
  private flushHistory: FlushHistory = FIRST_FLUSH;
  /** Lazy commits answered whose frames no flush has covered yet. */
  private lazyUnflushed = false;
  private readonly failureListeners: ((failure: StorageUnavailableError) => void)[] = [];
  private readonly alwaysPool: boolean;
  private readonly clockUs: () => number;
  /** Batches committed, operations in them, and log flushes, for metrics and benchmarks. */
  readonly stats = { batches: 0, operations: 0, largest: 0, flushes: 0, inlineFlushes: 0, lazyRounds: 0 };
  /** Told each batch's seconds from its transaction's start to its callers' answer (durable). */
  onCommitted: ((seconds: number) => void) | null = null;

  constructor(
    private readonly db: SqliteDatabase,
    options: CommitGroupOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 512;
    this.sliceUs = options.sliceUs ?? SLICE_US;
    const wal = !db.memory && db.pragma('journal_mode', { simple: true }) === 'wal';
    this.walFlush = options.flush === undefined ? (wal ? walFileFlush(db.name) : null) : options.flush;
    this.alwaysPool = options.flushPlace === 'pool';
    this.clockUs = options.clockUs ?? (() => performance.now() * 1000);
  }

  /** Runs `op` in the next group transaction; resolves with its result once that commit is durable. */
  run<T>(op: () => T): Promise<T> {
    return this.enqueue(op, false);
  }

  /**
   * Runs `op` in the next group transaction; resolves once committed, durable by the next flush (see
   * the file's comment: only for a commit nothing acknowledged or executed depends on until a later
   * durable commit). In a round with ordinary operations it waits for their flush.
   */
  runLazily<T>(op: () => T): Promise<T> {
    return this.enqueue(op, true);
  }

  private enqueue<T>(op: () => T, lazy: boolean): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ op, lazy, resolve: resolve, reject });
      this.schedule();
    });
  }

  /** Waits for the flush in flight, then closes the log's descriptor. Later operations are refused. */
  async close(): Promise<void> {
    while (this.flushing) await this.flushing;
    this.failure ??= new StorageUnavailableError(this.db.name, 'the store is closed');
    this.walFlush?.close();
  }

  /**
   * When the queue is committed. With a flush in flight, when it ends: everything that arrived
   * meanwhile becomes one batch. Otherwise at once, after the code already running (a microtask):
   * nothing is gained by waiting for the event loop's next turn, and a turn's critical path has three
   * commits. When SQLite syncs inside COMMIT (no separate flush), the next turn of the event loop,
   * so that requests read in the same poll share that sync.
   */
  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    if (this.walFlush) queueMicrotask(() => this.commitQueued());
    else setImmediate(() => this.commitQueued());
  }

  /**
   * Commits the queue in transactions of at most maxBatch operations and one slice of time, then
   * makes them durable. What the slice left is committed at the event loop's next turn, even while a
   * flush is in flight (its batches wait for the next flush): waiting for the flush as well would
   * cap the group at one slice of operations per flush, a fraction of what a busy gateway needs.
   */
  private commitQueued(): void {
    this.scheduled = false;
    const deadlineUs = this.clockUs() + this.sliceUs;
    while (this.queue.length > 0) {
      this.commit(deadlineUs);
      if (this.clockUs() >= deadlineUs) break;
    }
    this.makeDurable();
    if (this.queue.length > 0 && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.commitQueued());
    }
  }

  /**
   * One transaction from the head of the queue: operations run until maxBatch or `deadlineUs`, at
   * least one; those not reached go back to the head of the queue, in order.
   */
  private commit(deadlineUs: number): void {
    const batch = this.queue.splice(0, this.maxBatch);
    if (this.failure) {
      for (const queued of batch) queued.reject(this.failure);
      return;
    }
    let outcomes: Outcome[];
    const startedUs = this.clockUs();
    const changesBefore = this.walFlush ? this.totalChanges() : 0;
    try {
      outcomes = this.withoutInlineSync(() => {
        const plain = this.runPlainly(batch, deadlineUs);
        if (plain.outcomes) return plain.outcomes;
        // Again with a savepoint each: at least the operations the plain attempt reached.
        return tx(this.db, () => {
          const done: Outcome[] = [];
          do done.push(this.attempt(batch[done.length]!.op));
          while (done.length < batch.length && (done.length < plain.ran || this.clockUs() < deadlineUs));
          return done;
        });
      });
    } catch (failure) {
      for (const queued of batch) queued.reject(failure);
      return;
    }
    if (outcomes.length < batch.length) this.queue.unshift(...batch.splice(outcomes.length));
    this.stats.batches++;
    this.stats.operations += batch.length;
    this.stats.largest = Math.max(this.stats.largest, batch.length);
    const committed = { batch, outcomes, wrote: true, lazy: batch.every((q) => q.lazy), startedUs };
    if (this.walFlush) this.unflushed.push({ ...committed, wrote: this.totalChanges() !== changesBefore });
    else this.deliver(committed);
  }

  /** Rows changed on the connection so far (rolled-back changes count too: at worst, one flush too many). */
  private totalChanges(): number {
    return statement(this.db, 'SELECT total_changes()').pluck().get() as number;
  }

  /** Runs `fn` at synchronous=NORMAL when the group flushes the log itself. */
  private withoutInlineSync<T>(fn: () => T): T {
    return this.walFlush ? atSynchronousNormal(this.db, fn) : fn();
  }

  /**
   * Makes every batch committed so far durable, then delivers its outcomes: nothing to flush when
   * none of them wrote, else on this thread or the thread pool (flush-policy.ts). With a flush in
   * flight it does nothing: that flush calls it again when it ends.
   */
  private makeDurable(): void {
    if (this.flushing || this.unflushed.length === 0 || !this.walFlush) return;
    const waiting = this.unflushed;
    this.unflushed = [];
    if (!needsFlush(waiting, this.lazyUnflushed)) {
      if (waiting.some((c) => c.wrote)) {
        this.lazyUnflushed = true;
        this.stats.lazyRounds++;
      }
      waiting.forEach((c) => this.deliver(c));
      return;
    }
    // This flush covers every frame written before it starts, so every lazy commit answered so far
    // (a batch committed while it runs waits in `unflushed` for the next round).
    this.lazyUnflushed = false;
    this.stats.flushes++;
    const place = this.alwaysPool ? 'pool' : chooseFlushPlace(this.flushHistory);
    if (place === 'inline') {
      this.stats.inlineFlushes++;
      const start = this.clockUs();
      try {
        this.walFlush.flushSync();
      } catch (error) {
        this.fail(waiting, error);
        return;
      }
      this.flushHistory = recordFlush(this.flushHistory, 'inline', this.clockUs() - start);
      waiting.forEach((c) => this.deliver(c));
      return;
    }
    const startUs = this.clockUs();
    this.flushing = this.walFlush.flush().then(
      () => {
        this.flushing = null;
        this.flushHistory = recordFlush(this.flushHistory, 'pool', this.clockUs() - startUs);
        waiting.forEach((c) => this.deliver(c));
        if (this.queue.length > 0) this.commitQueued();
        else this.makeDurable();
      },
      (error: unknown) => {
        this.flushing = null;
        this.fail(waiting, error);
        if (this.queue.length > 0) this.commitQueued(); // refused, like every later operation
      },
    );
  }

  private deliver(committed: Committed): void {
    this.onCommitted?.((this.clockUs() - committed.startedUs) / 1e6);
    deliver(committed);
  }

  /** A failed flush: its callers, and those of every batch committed since, are refused, as is all that follows. */
  private fail(waiting: Committed[], error: unknown): void {
    this.failure = new StorageUnavailableError(
      this.db.name,
      `flushing the write-ahead log failed (${describe(error)}); restart the daemon to recover it`,
      { cause: error },
    );
    for (const { batch } of [...waiting, ...this.unflushed]) {
      for (const queued of batch) queued.reject(this.failure);
    }
    this.unflushed = [];
    for (const listener of this.failureListeners) listener(this.failure);
  }

  /** Why the group refuses every write (a failed flush, or closed), or null while it works. */
  get failed(): StorageUnavailableError | null {
    return this.failure;
  }

  /** Called once if a flush fails, so the daemon can say so in its log, not only to each caller. */
  onFailure(listener: (failure: StorageUnavailableError) => void): void {
    this.failureListeners.push(listener);
  }

  /**
   * The batch's operations without savepoints, from the first until `deadlineUs` (at least one): their
   * outcomes, or none (and nothing written) when one threw, with how many ran up to that one.
   */
  private runPlainly(batch: Queued[], deadlineUs: number): { outcomes: Outcome[] | null; ran: number } {
    let ran = 0;
    try {
      const outcomes = tx(this.db, () => {
        const done: Outcome[] = [];
        do {
          ran++;
          try {
            done.push({ ok: true, value: batch[done.length]!.op() });
          } catch {
            throw OPERATION_FAILED;
          }
        } while (done.length < batch.length && this.clockUs() < deadlineUs);
        return done;
      });
      return { outcomes, ran };
    } catch (error) {
      if (error === OPERATION_FAILED) return { outcomes: null, ran };
      throw error;
    }
  }

  /** One operation in its own savepoint; a failure that ended the whole transaction fails the batch. */
  private attempt(op: () => unknown): Outcome {
    try {
      return { ok: true, value: savepoint(this.db, op) };
    } catch (error) {
      if (!this.db.inTransaction) throw error;
      return { ok: false, error: asStorageUnavailable(this.db, error) };
    }
  }
}

/**
 * Whether a round must be flushed before its callers are answered: when it holds an ordinary
 * operation and anything unflushed exists that it may have written or read (its own writes, a lazy
 * batch of the same round, or a lazy commit answered earlier). A round of lazy batches alone never
 * waits. Pure.
 */
export function needsFlush(
  round: readonly Pick<Committed, 'wrote' | 'lazy'>[],
  lazyUnflushed: boolean,
): boolean {
  return round.some((c) => !c.lazy) && (lazyUnflushed || round.some((c) => c.wrote));
}

function deliver({ batch, outcomes }: Committed): void {
  batch.forEach((queued, i) => {
    const outcome = outcomes[i]!;
    if (outcome.ok) queued.resolve(outcome.value);
    else queued.reject(outcome.error);
  });
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.message : String(error);
}
