/** Publishing a compression on SQLite (LIN-1): one transaction, a compare-and-swap on the route, the link, the backoff. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { source } from '../../shared/fixtures.js';

let dir: string;
let store: SqliteSessionStore;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-compress-'));
  store = SqliteSessionStore.open(path.join(dir, 'state.db'));
});
afterEach(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('publishCompression', () => {
  it('moves the route to a child linked to its parent; the parent stays searchable; a second publish from the old parent changes nothing', async () => {
    const { entry } = await store.getOrCreateSession('k1', source());
    await store.appendToTranscript(entry.session_id, [
      { role: 'user', content: 'the zanzibar plan' },
      { role: 'assistant', content: 'ok' },
    ]);
    const publication = {
      sessionKey: 'k1',
      parentSessionId: entry.session_id,
      childSessionId: 'child-1',
      messages: [{ role: 'user' as const, content: '[Context summary] short' }],
      backoffSubject: 'k1',
    };
    expect(await store.publishCompression(publication)).toBe(true);
    expect((await store.lookupBySessionId('child-1'))?.session_key).toBe('k1');
    expect(await store.parentOf('child-1')).toBe(entry.session_id);
    expect(await store.parentOf(entry.session_id)).toBeNull();
    expect((await store.loadTranscript('child-1')).map((m) => m.content)).toEqual([
      '[Context summary] short',
    ]);
    expect((await store.searchMessages('zanzibar')).map((h) => h.session_id)).toEqual([entry.session_id]);
    // The route no longer points at the parent: nothing is written, not even the child row.
    expect(await store.publishCompression({ ...publication, childSessionId: 'child-2' })).toBe(false);
    expect(await store.loadTranscript('child-2')).toEqual([]);
    expect(await store.parentOf('child-2')).toBeNull();
  });

  it('keeps a failed compression backoff across a restart and clears it with the next success', async () => {
    const { entry } = await store.getOrCreateSession('k2', source());
    const backoff = {
      failures: 2,
      retryAfter: '2030-01-01T00:00:00.000Z',
      lastError: 'the summary call failed',
    };
    await store.recordCompressionFailure('k2', backoff);
    await store.close();
    store = SqliteSessionStore.open(path.join(dir, 'state.db'));
    expect(await store.compressionBackoff('k2')).toEqual(backoff);
    await store.publishCompression({
      sessionKey: 'k2',
      parentSessionId: entry.session_id,
      childSessionId: 'child-3',
      messages: [],
      backoffSubject: 'k2',
    });
    expect(await store.compressionBackoff('k2')).toBeNull();
  });
});
