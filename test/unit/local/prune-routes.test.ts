/**
 * Route pruning (issue 11 "Housekeeping") on one real SQLite file holding local sessions and chat
 * platform routes: the store itself knows a local session's route (its logical row owns it) and
 * never prunes it; a platform route is pruned when old unless its key is named as running now.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { localSessionKey } from '../../../src/domain/local/receipt.js';
import { startLocalHarness, type LocalHarness } from '../../fixtures/local-harness.js';
import { source } from '../../shared/session-store.suite.js';

let h: LocalHarness;
afterEach(async () => h.close());

describe('pruneOldEntries with local sessions on the same store', () => {
  it("never prunes a local session's route, prunes old platform routes except the running ones", async () => {
    h = await startLocalHarness();
    const local = await h.create('kept by its identity');
    expect(await h.turn(local, 'hello')).toBe('completed');
    const old = new Date('2020-01-01T00:00:00Z');
    await h.store.getOrCreateSession('telegram:old', source(), { now: old });
    await h.store.getOrCreateSession('telegram:running', source(), { now: old });
    // A key shaped like a local one whose logical row does not exist owns no identity: prunable.
    await h.store.getOrCreateSession(localSessionKey('no-such-session'), source(), { now: old });
    const later = new Date(Date.now() + 30 * 86_400_000);
    const removed = await h.store.pruneOldEntries({
      maxAgeDays: 1,
      now: later,
      liveSessionKeys: new Set(['telegram:running']),
    });
    expect(removed.sort()).toEqual([localSessionKey('no-such-session'), 'telegram:old'].sort());
    const left = (await h.store.listSessions()).entries.map((e) => e.session_key).sort();
    expect(left).toEqual([localSessionKey(local), 'telegram:running'].sort());
    // The local session goes on as before.
    expect(await h.turn(local, 'still here')).toBe('completed');
  });
});
