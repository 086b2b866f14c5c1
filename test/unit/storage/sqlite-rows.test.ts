import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { source } from '../../shared/fixtures.js';

let dir: string;
let store: SqliteSessionStore;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-rows-'));
  store = SqliteSessionStore.open(path.join(dir, 'state.db'));
});
afterEach(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function physicalRows(): { session_id: string; closed_reason: string | null }[] {
  return store.db.prepare('SELECT session_id, closed_reason FROM sessions ORDER BY rowid').all() as {
    session_id: string;
    closed_reason: string | null;
  }[];
}

describe('STO-2 physical session rows are closed, never deleted', () => {
  it('each transition closes the old row with its reason and leaves exactly one open row per key', async () => {
    const k = 'agent:main:local:dm:1';
    const a = (await store.getOrCreateSession(k, source())).entry.session_id;
    const b = (await store.getOrCreateSession(k, source(), { forceNew: true })).entry.session_id;
    const c = (await store.resetSession(k))!.session_id;
    await store.suspendSession(k);
    const d = (await store.getOrCreateSession(k, source())).entry.session_id;
    await store.switchSession(k, a, { expectedSessionId: d });
    expect(physicalRows()).toEqual([
      { session_id: a, closed_reason: null }, // closed by force_new, reopened by the switch
      { session_id: b, closed_reason: 'reset' },
      { session_id: c, closed_reason: 'suspended' },
      { session_id: d, closed_reason: 'switched' },
    ]);
    await store.pruneOldEntries({ maxAgeDays: 1, now: new Date(Date.now() + 2 * 86_400_000) });
    expect(physicalRows()[0]).toEqual({ session_id: a, closed_reason: 'pruned' });
    expect(await store.hasAnySessions()).toBe(true);
  });
});
