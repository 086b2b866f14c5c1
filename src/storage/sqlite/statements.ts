/**
 * Per-connection caches: prepared statements, so each SQL text is compiled once, and one transaction
 * runner, since better-sqlite3 builds four wrapper functions for every `db.transaction(fn)` — on the
 * hot path that cost more than the statements themselves.
 */
import type Database from 'better-sqlite3';

const caches = new WeakMap<Database.Database, Map<string, Database.Statement>>();

export function statement(db: Database.Database, sql: string): Database.Statement {
  let cache = caches.get(db);
  if (cache === undefined) {
    cache = new Map();
    caches.set(db, cache);
  }
  let stmt = cache.get(sql);
  if (stmt === undefined) {
    stmt = db.prepare(sql);
    cache.set(sql, stmt);
  }
  return stmt;
}

type Runner = Database.Transaction<(fn: () => unknown) => unknown>;
const runners = new WeakMap<Database.Database, Runner>();

function makeRunner(db: Database.Database): Runner {
  return db.transaction((fn: () => unknown) => fn());
}

/** The connection's transaction runner: `.immediate(fn)` for a write transaction, `(fn)` for a savepoint. */
export function transactionRunner(db: Database.Database): Runner {
  let runner = runners.get(db);
  if (runner === undefined) {
    runner = makeRunner(db);
    runners.set(db, runner);
  }
  return runner;
}

/**
 * `fn` in a savepoint of the caller's transaction (its own transaction when none is open): when it
 * throws, only its own writes are rolled back, and the error is passed on unchanged.
 */
export function savepoint<T>(db: Database.Database, fn: () => T): T {
  return transactionRunner(db)(fn) as T;
}

/**
 * `fn` with the connection at synchronous=NORMAL, back to FULL afterwards: for commits whose
 * durability is handled elsewhere (the group commit flushes the log itself) or not needed (the
 * derived search index). Every other write of the connection stays at FULL.
 */
export function atSynchronousNormal<T>(db: Database.Database, fn: () => T): T {
  statement(db, 'PRAGMA synchronous = NORMAL').run();
  try {
    return fn();
  } finally {
    statement(db, 'PRAGMA synchronous = FULL').run();
  }
}
