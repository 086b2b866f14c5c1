import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BACKGROUND_SAFETY_PAGES,
  type CheckpointerOptions,
} from '../../../src/storage/sqlite/checkpointer.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { source } from '../../shared/session-store.suite.js';

const open: SqliteSessionStore[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

function openStore(
  file: string,
  backgroundCheckpoints: boolean | CheckpointerOptions = true,
): SqliteSessionStore {
  const store = SqliteSessionStore.open(file, { backgroundCheckpoints });
  open.push(store);
  return store;
}

/** Waits for `done`, looking every 20 ms; fails after 10 s. */
async function until(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('the condition did not come true');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the write-ahead log is checkpointed on a thread of its own', () => {
  it('copies every committed frame into the database while the connection keeps only a far safety net', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-ckpt-')), 'state.db');
    const store = openStore(file);
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(BACKGROUND_SAFETY_PAGES);
    const { entry } = await store.getOrCreateSession('k', source());
    for (let i = 0; i < 200; i++) {
      await store.appendToTranscript(entry.session_id, { role: 'user', content: `message ${i}` });
    }
    const result = await store.checkpointer!.checkpoint();
    expect(result.log).toBeGreaterThan(0);
    expect(result.checkpointed).toBe(result.log); // nothing left behind in the log
    expect(store.checkpointer!.stats.checkpoints).toBeGreaterThanOrEqual(1);
    expect(store.checkpointer!.stats.failures).toBe(0);
  });

  it('runs by itself, without being asked, once a change has waited', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-ckpt-')), 'state.db');
    const store = openStore(file, { lingerMs: 50 });
    await store.getOrCreateSession('k', source());
    await until(() => store.checkpointer!.stats.checkpoints > 0);
    expect(store.checkpointer!.stats.checkpoints).toBeGreaterThan(0);
  });

  it('holds no thread while nothing changes: it starts for a burst of writes and stops once they end', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-ckpt-')), 'state.db');
    // A change that waits alone would start it only after an hour: here only the burst can.
    const store = openStore(file, { burstRows: 20, lingerMs: 3_600_000, idleMs: 200 });
    const checkpointer = store.checkpointer!;
    const { entry } = await store.getOrCreateSession('k', source());
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(checkpointer.running).toBe(false);
    expect(checkpointer.stats.checkpoints).toBe(0);
    for (let i = 0; i < 40; i++) {
      await store.appendToTranscript(entry.session_id, { role: 'user', content: `message ${i}` });
    }
    // The burst started it (nothing else could, and it had made no checkpoint): it may already have
    // stopped again by the time a loaded machine lets this look, so the count is what is waited on.
    await until(() => checkpointer.stats.checkpoints > 0);
    // Nothing changes any more: the thread stops, and everything was copied before it did.
    await until(() => !checkpointer.running);
    expect(checkpointer.stats.last).toMatchObject({ checkpointed: checkpointer.stats.last!.log });
    // Asked for a checkpoint while asleep, it starts again to answer.
    await expect(checkpointer.checkpoint()).resolves.toMatchObject({ log: expect.any(Number) as number });
    expect(checkpointer.running).toBe(true);
  });

  it('is shared by the connections of one file and stops with the last of them', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-ckpt-')), 'state.db');
    const first = openStore(file);
    const second = openStore(file);
    expect(second.checkpointer).toBe(first.checkpointer);
    await first.getOrCreateSession('kept', source());
    const shared = first.checkpointer!;
    await open.splice(open.indexOf(first), 1)[0]!.close();
    await expect(shared.checkpoint()).resolves.toMatchObject({ log: expect.any(Number) as number });
    await open.splice(open.indexOf(second), 1)[0]!.close();
    await expect(shared.checkpoint()).rejects.toThrow(/has stopped/);
    // A later open starts a fresh one, and the data is all there.
    const again = openStore(file);
    expect(again.checkpointer).not.toBe(shared);
    expect((await again.listSessions()).entries).toHaveLength(1);
  });

  it('is not started unless asked for (command-line tools, tests)', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-ckpt-')), 'state.db');
    const store = openStore(file, false);
    expect(store.checkpointer).toBeNull();
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(4000);
  });
});
