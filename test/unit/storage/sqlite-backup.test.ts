/**
 * `gatehouse backup`'s copy (backupDatabase) while another connection keeps committing, as a busy
 * gateway does: the copy ends, and it is a sound database holding what was committed when it began.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { backupDatabase } from '../../../src/storage/sqlite/maintenance.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-backup-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

it('ends while another connection commits between every turn of the event loop', async () => {
  const file = path.join(dir, 'state.db');
  const writer = new Database(file);
  writer.pragma('journal_mode = WAL');
  writer.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  const insert = writer.prepare('INSERT INTO t (body) VALUES (?)');
  // Enough pages (about 8 MB) for a copy in 100-page steps to need many turns of the event loop.
  writer.transaction(() => {
    for (let i = 0; i < 2_000; i++) insert.run('x'.repeat(4_000));
  })();
  let writing = true;
  let commits = 0;
  const commitEveryTurn = () => {
    if (!writing) return;
    insert.run('during the backup');
    commits++;
    setImmediate(commitEveryTurn);
  };
  setImmediate(commitEveryTurn);
  const dest = path.join(dir, 'copy.db');
  try {
    const { pages } = await backupDatabase(file, dest);
    expect(pages).toBeGreaterThan(1_000);
  } finally {
    writing = false;
  }
  expect(commits).toBeGreaterThan(0);
  writer.close();
  const copy = new Database(dest, { readonly: true });
  expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
  const rows = (copy.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
  expect(rows).toBeGreaterThanOrEqual(2_000);
  copy.close();
  expect(fs.statSync(dest).mode & 0o777).toBe(0o600);
});
