import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SessionSource } from '../../../src/domain/session/source.js';
import type { SessionSourceFields } from '../../../src/domain/vocabulary.js';
import { SqliteLocalStore } from '../../../src/storage/sqlite/local-store.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { testAdmission, testReceipt } from '../../shared/local-fixtures.js';

const origin: SessionSourceFields = new SessionSource({ platform: 'local', chat_id: 'L1' }).toJSON();
const receipt = testReceipt;
const admission = (id: string) => testAdmission('L1', id);

function fence(admission_id: string, epoch: number, generation: number) {
  return { admission_id, epoch, generation, outcome: 'completed' as const, detail: null };
}

describe('REC-3 epoch and generation fencing on the SQLite local store', () => {
  it('refuses a settlement from a stale epoch or generation and leaves the admission as it was', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-fence-')), 'state.db');
    const sessions = SqliteSessionStore.open(file);
    const store = new SqliteLocalStore(sessions.db);
    const oldEpoch = await store.openEpoch('first');
    await store.commitCreation({ receipt: receipt('L1'), origin, title: null, hidden: false });
    await Promise.all([store.admit(admission('a1')), store.admit(admission('a2'))]);
    const first = await store.claimNext('L1', oldEpoch);
    expect(first).toMatchObject({ kind: 'claimed', generation: 1 });

    // The process of oldEpoch is presumed dead: a new start opens a higher epoch and sweeps.
    const newEpoch = await store.openEpoch('second');
    expect(newEpoch).toBeGreaterThan(oldEpoch);
    expect((await store.markOrphansUnknown(newEpoch)).map((a) => a.admission_id)).toEqual(['a1']);
    expect(await store.resolveUnknown('a1', 1, 'resolved by test')).toBe(true);
    const second = await store.claimNext('L1', newEpoch);
    expect(second).toMatchObject({ kind: 'claimed', generation: 2 });

    // The old process wakes up and tries to settle what it ran: refused, nothing changes.
    expect(await store.settle(fence('a1', oldEpoch, 1))).toBe(false);
    expect(await store.settle(fence('a2', oldEpoch, 2))).toBe(false);
    expect(await store.settle(fence('a2', newEpoch, 1))).toBe(false);
    expect(await store.getAdmission('a1')).toMatchObject({
      state: 'interrupted',
      detail: 'resolved by test',
    });
    expect(await store.getAdmission('a2')).toMatchObject({
      state: 'running',
      epoch: newEpoch,
      generation: 2,
    });

    // The owner of the claim settles it.
    expect(await store.settle(fence('a2', newEpoch, 2))).toBe(true);
    expect(await store.getAdmission('a2')).toMatchObject({ state: 'completed' });
    await sessions.close();
  });

  it('records a clean shutdown on the epoch that stopped gracefully', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-fence-')), 'state.db');
    const sessions = SqliteSessionStore.open(file);
    const store = new SqliteLocalStore(sessions.db);
    const crashed = await store.openEpoch('crashed');
    const clean = await store.openEpoch('clean');
    await store.markCleanShutdown(clean);
    const rows = sessions.db
      .prepare('SELECT epoch, clean_shutdown_at FROM authority_epochs ORDER BY epoch')
      .all() as { epoch: number; clean_shutdown_at: string | null }[];
    expect(rows.map((r) => [r.epoch, r.clean_shutdown_at !== null])).toEqual([
      [crashed, false],
      [clean, true],
    ]);
    await sessions.close();
  });
});
