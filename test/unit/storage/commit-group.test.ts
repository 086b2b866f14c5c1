import fs, { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StorageUnavailableError } from '../../../src/domain/errors.js';
import { CommitGroup, needsFlush } from '../../../src/storage/sqlite/commit-group.js';
import { openDatabase, SYNCHRONOUS_FULL, type SqliteDatabase } from '../../../src/storage/sqlite/database.js';
import type { WalFlush } from '../../../src/storage/sqlite/wal-flush.js';

let db: SqliteDatabase | undefined;
afterEach(() => {
  vi.restoreAllMocks();
  if (db?.open) db.close();
});

function open(): SqliteDatabase {
  db = openDatabase(join(mkdtempSync(join(tmpdir(), 'gh-group-')), 'state.db'));
  db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE)');
  return db;
}

const insert = (db: SqliteDatabase, text: string) => () =>
  Number(db.prepare('INSERT INTO notes (text) VALUES (?)').run(text).lastInsertRowid);
const texts = (db: SqliteDatabase) =>
  (db.prepare('SELECT text FROM notes ORDER BY id').all() as { text: string }[]).map((r) => r.text);

/**
 * A clock that does not move: batches are bounded by maxBatch only, however slow the machine (a
 * transaction commits early once its operations have run a slice of time; see the sliceUs tests).
 */
const stillClock = { clockUs: () => 0 };

describe('CommitGroup (LOC-8 group commit)', () => {
  it('commits operations queued in the same tick in one transaction, in order, before any resolves', async () => {
    const db = open();
    const group = new CommitGroup(db, stillClock);
    const committedWhenResolved: boolean[] = [];
    const all = ['a', 'b', 'c'].map((t) =>
      group.run(insert(db, t)).then((id) => {
        // Resolution comes after COMMIT: no transaction is open, and the row is visible.
        committedWhenResolved.push(!db.inTransaction && texts(db).includes(t));
        return id;
      }),
    );
    expect(texts(db)).toEqual([]); // nothing runs before the tick ends
    expect(await Promise.all(all)).toEqual([1, 2, 3]);
    expect(committedWhenResolved).toEqual([true, true, true]);
    expect(group.stats).toMatchObject({ batches: 1, operations: 3, largest: 3, flushes: 1 });
  });

  it('rolls back and rejects only the operation that failed; the rest of its batch commits', async () => {
    const db = open();
    const group = new CommitGroup(db, stillClock);
    const results = await Promise.allSettled([
      group.run(insert(db, 'kept')),
      group.run(() => {
        insert(db, 'half-done')();
        insert(db, 'kept')(); // UNIQUE violation: the whole operation must vanish
      }),
      group.run(insert(db, 'also kept')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(texts(db)).toEqual(['kept', 'also kept']);
    expect(group.stats.batches).toBe(1);
  });

  it('rejects the whole batch with storage_unavailable when the database is full, writing nothing', async () => {
    const db = open();
    const group = new CommitGroup(db, stillClock);
    await group.run(insert(db, 'before'));
    db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
    const results = await Promise.allSettled([
      group.run(insert(db, 'small')),
      group.run(insert(db, 'x'.repeat(200_000))),
    ]);
    for (const r of results) {
      expect(r.status).toBe('rejected');
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(StorageUnavailableError);
    }
    expect(texts(db)).toEqual(['before']);
  });

  it('gathers operations queued during a commit into the next batch', async () => {
    const db = open();
    const group = new CommitGroup(db, stillClock);
    const later: Promise<number>[] = [];
    const first = group.run(() => {
      // Queued while the first batch runs: must wait for a batch of its own.
      later.push(group.run(insert(db, 'second')), group.run(insert(db, 'third')));
      return insert(db, 'first')();
    });
    await first;
    await Promise.all(later);
    expect(texts(db)).toEqual(['first', 'second', 'third']);
    expect(group.stats).toMatchObject({ batches: 2, operations: 3, largest: 2 });
  });

  it('splits a long queue into batches of at most maxBatch', async () => {
    const db = open();
    const group = new CommitGroup(db, { maxBatch: 4, ...stillClock });
    await Promise.all(Array.from({ length: 10 }, (_, i) => group.run(insert(db, `n${i}`))));
    expect(texts(db)).toHaveLength(10);
    expect(group.stats).toMatchObject({ batches: 3, operations: 10, largest: 4 });
  });

  it('commits a transaction once its operations have run sliceUs, and the rest after the event loop’s turn', async () => {
    const db = open();
    const clock = { nowUs: 0 };
    const group = new CommitGroup(db, { sliceUs: 100, clockUs: () => clock.nowUs });
    const seen: string[] = [];
    const op = (text: string) => () => {
      seen.push(text);
      clock.nowUs += 60; // two operations pass the slice
      return insert(db, text)();
    };
    const all = ['a', 'b', 'c', 'd', 'e'].map((t) => group.run(op(t)));
    setImmediate(() => seen.push('loop'));
    expect(await Promise.all(all)).toEqual([1, 2, 3, 4, 5]);
    expect(texts(db)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(seen).toEqual(['a', 'b', 'loop', 'c', 'd', 'e']);
    expect(group.stats).toMatchObject({ batches: 3, operations: 5, largest: 2 });
  });

  it('retries a sliced batch with savepoints over the operations it reached, and commits the rest after', async () => {
    const db = open();
    const clock = { nowUs: 0 };
    const group = new CommitGroup(db, { sliceUs: 100, clockUs: () => clock.nowUs });
    const tick = (fn: () => unknown) => () => {
      clock.nowUs += 60;
      return fn();
    };
    const results = await Promise.allSettled([
      group.run(tick(insert(db, 'kept'))),
      group.run(tick(insert(db, 'kept'))), // UNIQUE violation, rejected alone
      group.run(tick(insert(db, 'later'))),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(texts(db)).toEqual(['kept', 'later']);
    expect(group.stats).toMatchObject({ batches: 2, operations: 3 });
  });
});

/**
 * A log flush the test completes by hand: each pool flush waits until `finish` or `fail`. Inline
 * flushes are counted; each one "takes" `inlineCostUs` on the test's clock, and throws `inlineError`
 * when it is set.
 */
function handFlush() {
  const pending: { resolve(): void; reject(error: Error): void }[] = [];
  const state = { inline: 0, inlineCostUs: 5, inlineError: null as Error | null, nowUs: 0 };
  const flush: WalFlush = {
    flush: () => new Promise<void>((resolve, reject) => pending.push({ resolve, reject })),
    flushSync: () => {
      state.inline++;
      state.nowUs += state.inlineCostUs;
      if (state.inlineError) throw state.inlineError;
    },
    close: () => undefined,
  };
  return {
    flush,
    clockUs: () => state.nowUs,
    state,
    pending,
    finish: () => pending.shift()!.resolve(),
    fail: (error: Error) => pending.shift()!.reject(error),
  };
}

/** Lets setImmediate callbacks and promise reactions run. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

const EIO = () => Object.assign(new Error('I/O error'), { code: 'EIO' });

async function expectFlushFailure(results: Promise<unknown>[]): Promise<void> {
  for (const result of await Promise.allSettled(results)) {
    expect(result.status).toBe('rejected');
    const reason = (result as PromiseRejectedResult).reason as StorageUnavailableError;
    expect(reason).toBeInstanceOf(StorageUnavailableError);
    expect(reason.message).toMatch(/flushing the write-ahead log failed \(EIO\)/);
  }
}

describe('CommitGroup: the log flush runs off the event loop', () => {
  it('commits without an inline fsync and acknowledges only after the log flush', async () => {
    const db = open();
    const hand = handFlush();
    const group = new CommitGroup(db, { flush: hand.flush, flushPlace: 'pool', clockUs: hand.clockUs });
    let syncInsideCommit = -1;
    let resolved = 0;
    const done = Promise.all([
      group.run(() => {
        syncInsideCommit = db.pragma('synchronous', { simple: true }) as number;
        return insert(db, 'a')();
      }),
      group.run(insert(db, 'b')),
    ]).then(() => (resolved = 2));
    await turn();
    expect(texts(db)).toEqual(['a', 'b']); // committed…
    expect(hand.pending).toHaveLength(1);
    await turn();
    expect(resolved).toBe(0); // …but not acknowledged before the flush
    expect(syncInsideCommit).toBe(1); // NORMAL inside the group transaction
    expect(db.pragma('synchronous', { simple: true })).toBe(SYNCHRONOUS_FULL); // FULL for every other write
    hand.finish();
    await done;
    expect(resolved).toBe(2);
  });

  it('needs no flush for a batch that wrote nothing, unless a flush of what it read is in flight', async () => {
    const db = open();
    const hand = handFlush();
    const group = new CommitGroup(db, { flush: hand.flush, flushPlace: 'pool', clockUs: hand.clockUs });
    expect(await group.run(() => texts(db))).toEqual([]);
    expect(group.stats.flushes).toBe(0);
    // Two writers go to the pool; a reader queued while that flush runs sees their rows, so it waits.
    const writers = Promise.all([group.run(insert(db, 'a')), group.run(insert(db, 'b'))]);
    await turn();
    let seen: string[] | null = null;
    const reader = group.run(() => texts(db)).then((rows) => (seen = rows));
    await turn();
    await turn();
    expect(seen).toBeNull();
    hand.finish();
    await Promise.all([writers, reader]);
    expect(seen).toEqual(['a', 'b']);
    expect(group.stats.flushes).toBe(1); // the reader needed no flush of its own
  });

  it('commits what a slice left at the loop’s next turn while the flush runs; it waits for the next flush', async () => {
    const db = open();
    const hand = handFlush();
    const group = new CommitGroup(db, {
      flush: hand.flush,
      flushPlace: 'pool',
      sliceUs: 100,
      clockUs: hand.clockUs,
    });
    const op = (text: string) => () => {
      hand.state.nowUs += 60; // two operations pass the slice
      return insert(db, text)();
    };
    const resolved: string[] = [];
    const all = ['a', 'b', 'c'].map((t) => group.run(op(t)).then(() => resolved.push(t)));
    await turn();
    await turn();
    expect(texts(db)).toEqual(['a', 'b', 'c']); // c committed during the first flush
    expect(resolved).toEqual([]);
    hand.finish();
    await turn();
    expect(resolved).toEqual(['a', 'b']); // c was not covered by that flush
    hand.finish();
    await Promise.all(all);
    expect(resolved).toEqual(['a', 'b', 'c']);
    expect(group.stats).toMatchObject({ batches: 2, flushes: 2 });
  });

  it('gathers operations queued during a flush into one batch, committed and flushed after it', async () => {
    const db = open();
    const hand = handFlush();
    const group = new CommitGroup(db, { flush: hand.flush, flushPlace: 'pool', clockUs: hand.clockUs });
    const order: string[] = [];
    const first = group.run(insert(db, 'first')).then(() => order.push('first'));
    await turn();
    expect(hand.pending).toHaveLength(1);
    const later = Promise.all([group.run(insert(db, 'second')), group.run(insert(db, 'third'))]).then(() =>
      order.push('later'),
    );
    await turn();
    expect(texts(db)).toEqual(['first']); // waiting for the flush in flight
    expect(hand.pending).toHaveLength(1); // one flush at a time
    hand.finish();
    await first;
    await turn();
    expect(texts(db)).toEqual(['first', 'second', 'third']);
    expect(order).toEqual(['first']); // committed, not yet flushed
    expect(hand.pending).toHaveLength(1);
    hand.finish();
    await later;
    expect(order).toEqual(['first', 'later']);
    expect(group.stats).toMatchObject({ batches: 2, operations: 3, largest: 2, flushes: 2 });
  });

  it('after a failed flush rejects its callers and every later operation, and writes nothing more', async () => {
    const db = open();
    const hand = handFlush();
    const group = new CommitGroup(db, { flush: hand.flush, flushPlace: 'pool', clockUs: hand.clockUs });
    const first = [group.run(insert(db, 'first')), group.run(insert(db, 'first too'))];
    await turn();
    const queued = group.run(insert(db, 'queued during the flush'));
    await turn();
    const told: string[] = [];
    group.onFailure((failure) => told.push(failure.message));
    expect(group.failed).toBeNull();
    hand.fail(EIO());
    await expectFlushFailure([...first, queued]);
    expect(told).toHaveLength(1); // the daemon hears of it once, whatever the number of callers
    expect(group.failed?.reason).toBe('storage_unavailable');
    await expect(group.run(insert(db, 'later'))).rejects.toBeInstanceOf(StorageUnavailableError);
    await turn();
    expect(texts(db)).toEqual(['first', 'first too']);
    expect(hand.pending).toHaveLength(0);
  });

  it('flushes the connection’s own -wal file with fdatasync by default, inline or on the pool', async () => {
    const db = open();
    const synced: number[] = [];
    const real = fs.fdatasync;
    vi.spyOn(fs, 'fdatasync').mockImplementation((fd, callback) => {
      synced.push(fs.fstatSync(fd).ino);
      real(fd, callback);
    });
    const realSync = fs.fdatasyncSync;
    vi.spyOn(fs, 'fdatasyncSync').mockImplementation((fd) => {
      synced.push(fs.fstatSync(fd).ino);
      realSync(fd);
    });
    const group = new CommitGroup(db, stillClock);
    await Promise.all([group.run(insert(db, 'a')), group.run(insert(db, 'b'))]);
    await group.run(insert(db, 'c'));
    const wal = fs.statSync(`${db.name}-wal`).ino;
    expect(synced).toEqual([wal, wal]); // inline or on the pool, as measured: always the log itself
    expect(group.stats).toMatchObject({ flushes: 2 });
    await group.close();
    await expect(group.run(insert(db, 'd'))).rejects.toThrow(/the store is closed/);
  });

  it('leaves an in-memory database to SQLite: no separate flush', async () => {
    const memory = new Database(':memory:');
    try {
      memory.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE)');
      const group = new CommitGroup(memory, stillClock);
      expect(await group.run(insert(memory, 'a'))).toBe(1);
      expect(group.stats).toMatchObject({ batches: 1, flushes: 0 });
    } finally {
      memory.close();
    }
  });

  it('close waits for the flush in flight', async () => {
    const db = open();
    const hand = handFlush();
    const group = new CommitGroup(db, { flush: hand.flush, flushPlace: 'pool', clockUs: hand.clockUs });
    const ops = Promise.all([group.run(insert(db, 'a')), group.run(insert(db, 'b'))]);
    await turn();
    let closed = false;
    const closing = group.close().then(() => (closed = true));
    await turn();
    expect(closed).toBe(false);
    hand.finish();
    await Promise.all([ops, closing]);
    expect(closed).toBe(true);
  });
});

describe('CommitGroup: lazy operations (a turn’s claim)', () => {
  it('answers a round of lazy operations once committed, and the next flush covers their frames', async () => {
    const db = open();
    const hand = handFlush();
    const group = new CommitGroup(db, { flush: hand.flush, flushPlace: 'pool' });
    const claims = await Promise.all([
      group.runLazily(insert(db, 'claim-1')),
      group.runLazily(insert(db, 'claim-2')),
    ]);
    expect(claims).toEqual([1, 2]);
    expect(hand.pending).toHaveLength(0); // answered without a flush
    expect(group.stats).toMatchObject({ flushes: 0, lazyRounds: 1 });
    // The next ordinary write waits for a flush, and that flush is what makes the claims durable too.
    let settled = false;
    const settle = group.run(insert(db, 'settle')).then(() => (settled = true));
    await turn();
    expect(hand.pending).toHaveLength(1);
    expect(settled).toBe(false);
    hand.finish();
    await settle;
    expect(texts(db)).toEqual(['claim-1', 'claim-2', 'settle']);
  });

  it('an ordinary operation that wrote nothing is still flushed while a lazy commit is unflushed', async () => {
    const db = open();
    const hand = handFlush();
    const group = new CommitGroup(db, { flush: hand.flush, flushPlace: 'pool' });
    await group.runLazily(insert(db, 'claim'));
    let seen: string[] | null = null;
    const reader = group.run(() => texts(db)).then((rows) => (seen = rows));
    await turn();
    await turn();
    expect(seen).toBeNull(); // it read the claim: it is answered only once the claim is on disk
    hand.finish();
    await reader;
    expect(seen).toEqual(['claim']);
    // Flushed: a later reader needs no flush of its own again.
    expect(await group.run(() => texts(db))).toEqual(['claim']);
    expect(group.stats.flushes).toBe(1);
  });

  it('a lazy operation sharing a round with an ordinary write waits for that round’s flush', async () => {
    const db = open();
    const hand = handFlush();
    const group = new CommitGroup(db, { flush: hand.flush, flushPlace: 'pool' });
    let answered = 0;
    const both = Promise.all([
      group.run(insert(db, 'admission')).then(() => answered++),
      group.runLazily(insert(db, 'claim')).then(() => answered++),
    ]);
    await turn();
    await turn();
    expect(answered).toBe(0);
    hand.finish();
    await both;
    expect(answered).toBe(2);
  });

  it('an ordinary read batched after a lazy write in the same round waits for the flush', async () => {
    const db = open();
    const hand = handFlush();
    // One operation a transaction: the claim and the read are two batches of one round.
    const group = new CommitGroup(db, { flush: hand.flush, flushPlace: 'pool', maxBatch: 1 });
    let seen: string[] | null = null;
    const claim = group.runLazily(insert(db, 'claim'));
    const reader = group.run(() => texts(db)).then((rows) => (seen = rows));
    await turn();
    await turn();
    expect(seen).toBeNull(); // it read the claim of its own round, not yet on disk
    expect(hand.pending).toHaveLength(1);
    hand.finish();
    await Promise.all([claim, reader]);
    expect(seen).toEqual(['claim']);
  });

  it('needsFlush: only a round with an ordinary operation waits, and only when something is unflushed', () => {
    const lazyWrite = { wrote: true, lazy: true };
    const read = { wrote: false, lazy: false };
    const write = { wrote: true, lazy: false };
    expect(needsFlush([lazyWrite], false)).toBe(false);
    expect(needsFlush([lazyWrite], true)).toBe(false);
    expect(needsFlush([read], false)).toBe(false);
    expect(needsFlush([read], true)).toBe(true);
    expect(needsFlush([lazyWrite, read], false)).toBe(true);
    expect(needsFlush([write], false)).toBe(true);
  });

  it('a lazy commit is in the log before any flush: another connection reads it', async () => {
    const db = open();
    const group = new CommitGroup(db, { flush: handFlush().flush, flushPlace: 'pool' });
    await group.runLazily(insert(db, 'claim'));
    // A second connection (as a restarted daemon) reads the log the first one wrote.
    const other = new Database(db.name, { readonly: true });
    try {
      expect(
        (other.prepare('SELECT text FROM notes').all() as { text: string }[]).map((r) => r.text),
      ).toEqual(['claim']);
    } finally {
      other.close();
    }
  });
});

describe('CommitGroup: inline flushes while they are cheap', () => {
  it('flushes on the calling thread while a flush costs less than the trip to the pool', async () => {
    const db = open();
    const hand = handFlush();
    const group = new CommitGroup(db, { flush: hand.flush, clockUs: hand.clockUs });
    for (let i = 0; i < 5; i++) await group.run(insert(db, `n${i}`));
    expect(hand.state.inline).toBe(5);
    expect(hand.pending).toHaveLength(0);
    expect(group.stats).toMatchObject({ flushes: 5, inlineFlushes: 5 });
  });

  it('moves to the pool after three expensive inline flushes in a row', async () => {
    const db = open();
    const hand = handFlush();
    hand.state.inlineCostUs = 400; // a real disk
    const group = new CommitGroup(db, { flush: hand.flush, clockUs: hand.clockUs });
    for (let i = 0; i < 3; i++) await group.run(insert(db, `n${i}`));
    expect(hand.state.inline).toBe(3);
    const next = group.run(insert(db, 'on the pool'));
    await turn();
    expect(hand.pending).toHaveLength(1);
    hand.finish();
    await next;
    expect(group.stats).toMatchObject({ flushes: 4, inlineFlushes: 3 });
  });

  it('treats a failed inline flush like a failed pool flush', async () => {
    const db = open();
    const hand = handFlush();
    hand.state.inlineError = EIO();
    const group = new CommitGroup(db, { flush: hand.flush, clockUs: hand.clockUs });
    await expectFlushFailure([group.run(insert(db, 'lone'))]);
    await expect(group.run(insert(db, 'later'))).rejects.toBeInstanceOf(StorageUnavailableError);
    expect(texts(db)).toEqual(['lone']);
  });
});
