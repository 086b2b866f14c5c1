/** Fixtures for tests of the local-session store and scheduler on a real SQLite file. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { submissionDigest } from '../../src/domain/local/admission.js';
import { RECEIPT_KIND, type CreationReceipt, type OwnerRef } from '../../src/domain/local/receipt.js';
import { SessionSource } from '../../src/domain/session/source.js';
import type { NewAdmission } from '../../src/domain/ports/local-store.js';
import { SqliteLocalStore } from '../../src/storage/sqlite/local-store.js';
import { SqliteSessionStore } from '../../src/storage/sqlite/session-store.js';

export const OWNER: OwnerRef = { subject: 'alice', provider: 'native' };

/** A minimal valid creation receipt of a cli session owned by OWNER. */
export function testReceipt(logicalId: string): CreationReceipt {
  return {
    kind: RECEIPT_KIND,
    logical_id: logicalId,
    current_session_id: logicalId,
    owner: OWNER,
    profile: 'default',
    request_id: null,
    creation_digest: 'd',
    policy: { source: 'cli', cwd: '/tmp', model: 'm', toolsets: [] } as unknown as CreationReceipt['policy'],
    lineage: [],
    created_at: new Date().toISOString(),
  };
}

/** An admission by OWNER whose text is `text` (default: the id itself). */
export function testAdmission(logicalId: string, id: string, text = id): NewAdmission {
  return {
    admission_id: id,
    logical_id: logicalId,
    submission_id: id,
    submitter: OWNER,
    profile: 'default',
    digest: submissionDigest(text),
    text,
    binding: null,
  };
}

export interface LocalStoreRig {
  sessions: SqliteSessionStore;
  store: SqliteLocalStore;
  epoch: number;
}

/** A fresh database file with one epoch opened and a local session created for each id. */
export async function openLocalStore(logicalIds: readonly string[]): Promise<LocalStoreRig> {
  const sessions = SqliteSessionStore.open(join(mkdtempSync(join(tmpdir(), 'gh-local-')), 'state.db'));
  const store = new SqliteLocalStore(sessions.db);
  const epoch = await store.openEpoch('test');
  for (const id of logicalIds) {
    const origin = new SessionSource({ platform: 'local', chat_id: id }).toJSON();
    await store.commitCreation({ receipt: testReceipt(id), origin, title: null, hidden: false });
  }
  return { sessions, store, epoch };
}
