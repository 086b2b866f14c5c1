/**
 * Group commit on SQLite (LOC-8): store operations queued in the same tick run together in ONE
 * IMMEDIATE transaction, so one FULL-sync commit makes all of them durable; each caller's promise
 * settles only after that commit.
 *
 * Operations almost never fail, so a batch first runs them plainly. If one throws, that attempt is
 * rolled back whole and the batch runs again with each operation in its own savepoint: the one that
 * throws rolls back alone and rejects alone, while the others commit. (Operations are pure database
 * work, so running them again is safe.) If SQLite aborts the whole transaction (disk full, I/O
 * error), every operation of the batch is rejected — none of them was made durable. Operations queued while a batch
 * is committing gather for the next one, so under load one fsync acknowledges many callers across
 * many sessions.
 */
import { asStorageUnavailable, tx } from './actions-common.js';
import type { SqliteDatabase } from './database.js';
import { savepoint } from './statements.js';

interface Queued {
  op: () => unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

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

  private queue: Queued[] = [];
  private scheduled = false;
  /** Batches committed and operations in them, for metrics and benchmarks. */
  readonly stats = { batches: 0, operations: 0, largest: 0 };

  constructor(
    private readonly db: SqliteDatabase,
    private readonly maxBatch = 512,
  ) {}

  /** Runs `op` in the next group transaction; resolves with its result once that commit is durable. */
  run<T>(op: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ op, resolve: resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    while (this.queue.length > 0) this.commit(this.queue.splice(0, this.maxBatch));
  }

  private commit(batch: Queued[]): void {
    let outcomes: Outcome[];
    try {
      outcomes = this.runPlainly(batch) ?? tx(this.db, () => batch.map((queued) => this.attempt(queued.op)));
    } catch (failure) {
      for (const queued of batch) queued.reject(failure);
      return;
    }
    this.stats.batches++;
    this.stats.operations += batch.length;
    this.stats.largest = Math.max(this.stats.largest, batch.length);
    batch.forEach((queued, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) queued.resolve(outcome.value);
      else queued.reject(outcome.error);
    });
  }

  /** The whole batch without savepoints; null (and nothing written) when any operation threw. */
  private runPlainly(batch: Queued[]): Outcome[] | null {
    try {
      return tx(this.db, () =>
        batch.map((queued): Outcome => {
          try {
            return { ok: true, value: queued.op() };
          } catch {
            throw OPERATION_FAILED;
          }
        }),
      );
    } catch (error) {
      if (error === OPERATION_FAILED) return null;
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
