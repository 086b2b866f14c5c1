import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StorageUnavailableError } from '../../../src/domain/errors.js';
import { CommitGroup } from '../../../src/storage/sqlite/commit-group.js';
import { openDatabase, type SqliteDatabase } from '../../../src/storage/sqlite/database.js';

let db: SqliteDatabase | undefined;
afterEach(() => db?.close());

function open(): SqliteDatabase {
  db = openDatabase(join(mkdtempSync(join(tmpdir(), 'gh-group-')), 'state.db'));
  db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE)');
  return db;
}

const insert = (db: SqliteDatabase, text: string) => () =>
  Number(db.prepare('INSERT INTO notes (text) VALUES (?)').run(text).lastInsertRowid);
const texts = (db: SqliteDatabase) =>
  (db.prepare('SELECT text FROM notes ORDER BY id').all() as { text: string }[]).map((r) => r.text);

describe('CommitGroup (LOC-8 group commit)', () => {
  it('commits operations queued in the same tick in one transaction, in order, before any resolves', async () => {
    const db = open();
    const group = new CommitGroup(db);
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
    expect(group.stats).toEqual({ batches: 1, operations: 3, largest: 3 });
  });

  it('rolls back and rejects only the operation that failed; the rest of its batch commits', async () => {
    const db = open();
    const group = new CommitGroup(db);
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
    const group = new CommitGroup(db);
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
    const group = new CommitGroup(db);
    const later: Promise<number>[] = [];
    const first = group.run(() => {
      // Queued while the first batch runs: must wait for a batch of its own.
      later.push(group.run(insert(db, 'second')), group.run(insert(db, 'third')));
      return insert(db, 'first')();
    });
    await first;
    await Promise.all(later);
    expect(texts(db)).toEqual(['first', 'second', 'third']);
    expect(group.stats).toEqual({ batches: 2, operations: 3, largest: 2 });
  });

  it('splits a long queue into batches of at most maxBatch', async () => {
    const db = open();
    const group = new CommitGroup(db, 4);
    await Promise.all(Array.from({ length: 10 }, (_, i) => group.run(insert(db, `n${i}`))));
    expect(texts(db)).toHaveLength(10);
    expect(group.stats).toEqual({ batches: 3, operations: 10, largest: 4 });
  });
});
