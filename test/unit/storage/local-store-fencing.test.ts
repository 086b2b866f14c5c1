import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SessionSource } from '../../../src/domain/session/source.js';
import { submissionDigest } from '../../../src/domain/local/admission.js';
import { RECEIPT_KIND, type CreationReceipt } from '../../../src/domain/local/receipt.js';
import type { SessionSourceFields } from '../../../src/domain/vocabulary.js';
import { SqliteLocalStore } from '../../../src/storage/sqlite/local-store.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';

const owner = { subject: 'alice', provider: 'native' };
const origin: SessionSourceFields = new SessionSource({ platform: 'local', chat_id: 'L1' }).toJSON();

function receipt(logicalId: string): CreationReceipt {
  return {
    kind: RECEIPT_KIND,
    logical_id: logicalId,
    current_session_id: logicalId,
    owner,
    profile: 'default',
    request_id: null,
    creation_digest: 'd',
    policy: { source: 'cli', cwd: '/tmp', model: 'm', toolsets: [] } as unknown as CreationReceipt['policy'],
    lineage: [],
    created_at: new Date().toISOString(),
  };
}

function admission(id: string) {
  return {
    admission_id: id,
    logical_id: 'L1',
    submission_id: id,
    submitter: owner,
    profile: 'default',
    digest: submissionDigest(id),
    text: id,
    binding: null,
  };
}

describe('REC-3 epoch and generation fencing on the SQLite local store', () => {
  it('refuses a settlement from a stale epoch or generation and leaves the admission as it was', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-fence-')), 'state.db');
    const sessions = SqliteSessionStore.open(file);
    const store = new SqliteLocalStore(sessions.db);
    const oldEpoch = store.openEpoch('first');
    store.commitCreation({ receipt: receipt('L1'), origin, title: null, hidden: false });
    store.admit([admission('a1'), admission('a2')]);
    const first = store.claimNext('L1', oldEpoch);
    expect(first).toMatchObject({ kind: 'claimed', generation: 1 });

    // The process of oldEpoch is presumed dead: a new start opens a higher epoch and sweeps.
    const newEpoch = store.openEpoch('second');
    expect(newEpoch).toBeGreaterThan(oldEpoch);
    expect(store.markOrphansUnknown(newEpoch).map((a) => a.admission_id)).toEqual(['a1']);
    expect(store.resolveUnknown('a1', 1, 'resolved by test')).toBe(true);
    const second = store.claimNext('L1', newEpoch);
    expect(second).toMatchObject({ kind: 'claimed', generation: 2 });

    // The old process wakes up and tries to settle what it ran: refused, nothing changes.
    expect(store.settle('a1', oldEpoch, 1, 'completed', null)).toBe(false);
    expect(store.settle('a2', oldEpoch, 2, 'completed', null)).toBe(false);
    expect(store.settle('a2', newEpoch, 1, 'completed', null)).toBe(false);
    expect(store.getAdmission('a1')).toMatchObject({ state: 'interrupted', detail: 'resolved by test' });
    expect(store.getAdmission('a2')).toMatchObject({ state: 'running', epoch: newEpoch, generation: 2 });

    // The owner of the claim settles it.
    expect(store.settle('a2', newEpoch, 2, 'completed', null)).toBe(true);
    expect(store.getAdmission('a2')).toMatchObject({ state: 'completed' });
    await sessions.close();
  });

  it('records a clean shutdown on the epoch that stopped gracefully', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-fence-')), 'state.db');
    const sessions = SqliteSessionStore.open(file);
    const store = new SqliteLocalStore(sessions.db);
    const crashed = store.openEpoch('crashed');
    const clean = store.openEpoch('clean');
    store.markCleanShutdown(clean);
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
