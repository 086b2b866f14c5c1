import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StorageUnavailableError } from '../../../src/domain/errors.js';
import { SqliteLocalStore } from '../../../src/storage/sqlite/local-store.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';

describe('STO-5 a store that cannot be written is a typed storage_unavailable', () => {
  it('maps a lock held by another process past busy_timeout to StorageUnavailableError, writing nothing', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-locked-')), 'state.db');
    const sessions = SqliteSessionStore.open(file, { busyTimeoutMs: 50 });
    const store = new SqliteLocalStore(sessions.db);
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    const error = await store.openEpoch('blocked').then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect((error as StorageUnavailableError).reason).toBe('storage_unavailable');
    expect((error as Error).message).toContain('SQLITE_BUSY');
    other.exec('ROLLBACK');
    other.close();
    expect(await store.openEpoch('free')).toBe(1);
    await sessions.close();
  });

  it('maps a full database (max_page_count) to StorageUnavailableError and keeps earlier commits', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-full-')), 'state.db');
    const sessions = SqliteSessionStore.open(file);
    const store = new SqliteLocalStore(sessions.db);
    const first = await store.openEpoch('before');
    const pages = sessions.db.pragma('page_count', { simple: true }) as number;
    sessions.db.pragma(`max_page_count = ${pages}`);
    await expect(store.openEpoch('x'.repeat(200_000))).rejects.toThrow(StorageUnavailableError);
    const rows = sessions.db.prepare('SELECT epoch FROM authority_epochs').all();
    expect(rows).toEqual([{ epoch: first }]);
    await sessions.close();
  });
});
