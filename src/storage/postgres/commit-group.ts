/**
 * Group commit on PostgreSQL (LOC-8), as on SQLite: store operations queued together run in ONE
 * transaction, so one COMMIT — one WAL flush at `synchronous_commit = on` — makes all of them
 * durable, and each caller's promise settles only after it. While a batch is on the wire, new
 * operations gather and form the next batch when it ends; with none in flight an operation starts
 * after the code already running (a microtask), so an idle gateway waits for no batching window.
 *
 * A batch first runs its operations plainly. If one throws, the attempt is rolled back whole and the
 * batch runs again with each operation in its own savepoint: the one that throws rolls back and
 * rejects alone, the others commit. (Operations are pure database work, so running them again is
 * safe.) A failed COMMIT or a lost connection rejects every operation of the batch, and the
 * connection refuses all later ones (database.ts).
 *
 * A batch made only of operations asked for by name as lazy (runLazily: a turn's claim, which nothing
 * acknowledged or executed depends on until a later durable commit) commits with
 * `SET LOCAL synchronous_commit = off`: its COMMIT answers without waiting for the WAL flush, and
 * the next synchronous commit (on any connection: it flushes the WAL up to its own record, after
 * this one's) makes it durable. docs/decisions.md ("The claim's commit") has the argument.
 */
import { performance } from 'node:perf_hooks';
import type { PgDatabase, Sql } from './database.js';

interface Queued {
  op: (sql: Sql) => Promise<unknown>;
  /** runLazily: may be answered before its commit's WAL record is flushed. */
  lazy: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

const groups = new WeakMap<PgDatabase, PgCommitGroup>();

/** Thrown out of a plain attempt to roll it back whole; never seen by a caller. */
const OPERATION_FAILED = new Error('an operation of the batch failed');

export class PgCommitGroup {
  /** The connection's shared group: every store on one connection commits in the same batches. */
  static of(db: PgDatabase): PgCommitGroup {
    let group = groups.get(db);
    if (!group) {
      group = new PgCommitGroup(db);
      groups.set(db, group);
    }
    return group;
  }

  private queue: Queued[] = [];
  private busy = false;
  /** Batches committed, operations in them, and the largest batch, for metrics and benchmarks. */
  readonly stats = { batches: 0, operations: 0, largest: 0, lazyBatches: 0 };
  /** Told each batch's seconds from its transaction's start to its COMMIT's answer. */
  onCommitted: ((seconds: number) => void) | null = null;

  constructor(
    private readonly db: PgDatabase,
    private readonly maxBatch = 512,
  ) {}

  /** Runs `op` in the next group transaction; resolves with its result once that commit is durable. */
  run<T>(op: (sql: Sql) => Promise<T>): Promise<T> {
    return this.enqueue(op, false);
  }

  /**
   * Runs `op` in the next group transaction; resolves once committed, durable by the next
   * synchronous commit (see the file's comment). In a batch with ordinary operations it commits
   * synchronously with them.
   */
  runLazily<T>(op: (sql: Sql) => Promise<T>): Promise<T> {
    return this.enqueue(op, true);
  }

  private enqueue<T>(op: (sql: Sql) => Promise<T>, lazy: boolean): Promise<T> {
    if (this.db.failed) return Promise.reject(this.db.failed);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ op, lazy, resolve: (value) => resolve(value as T), reject });
      if (!this.busy) {
        this.busy = true;
        queueMicrotask(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      let outcomes: Outcome[];
      const started = performance.now();
      const lazy = batch.every((queued) => queued.lazy);
      try {
        outcomes = await this.db.exclusive(
          async (sql) => (await this.runPlainly(sql, batch, lazy)) ?? this.runApart(batch, lazy),
        );
      } catch (error) {
        for (const queued of batch) queued.reject(error);
        continue;
      }
      this.stats.batches++;
      if (lazy) this.stats.lazyBatches++;
      this.stats.operations += batch.length;
      this.stats.largest = Math.max(this.stats.largest, batch.length);
      this.onCommitted?.((performance.now() - started) / 1000);
      batch.forEach((queued, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) queued.resolve(outcome.value);
        else queued.reject(outcome.error);
      });
    }
    this.busy = false;
  }

  /** The whole batch in one transaction without savepoints; null (nothing written) when an operation threw. */
  private async runPlainly(sql: Sql, batch: Queued[], lazy: boolean): Promise<Outcome[] | null> {
    try {
      return await this.db.inTransaction(async () => {
        if (lazy) await commitLazily(sql);
        const outcomes: Outcome[] = [];
        for (const queued of batch) {
          try {
            outcomes.push({ ok: true, value: await queued.op(sql) });
          } catch (error) {
            if (this.db.failed) throw error;
            throw OPERATION_FAILED;
          }
        }
        return outcomes;
      });
    } catch (error) {
      if (error === OPERATION_FAILED) return null;
      throw error;
    }
  }

  /** Each operation in its own savepoint of one transaction: a failing one rejects alone. */
  private runApart(batch: Queued[], lazy: boolean): Promise<Outcome[]> {
    return this.db.inTransaction(async (sql) => {
      if (lazy) await commitLazily(sql);
      const outcomes: Outcome[] = [];
      for (const queued of batch) {
        try {
          outcomes.push({ ok: true, value: await this.db.savepoint(queued.op) });
        } catch (error) {
          if (this.db.failed) throw error;
          outcomes.push({ ok: false, error });
        }
      }
      return outcomes;
    });
  }
}

/** This transaction's COMMIT does not wait for its WAL record to reach the disk. */
async function commitLazily(sql: Sql): Promise<void> {
  await sql.run('SET LOCAL synchronous_commit = off');
}
