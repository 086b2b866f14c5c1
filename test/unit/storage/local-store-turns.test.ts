import { afterEach, describe, expect, it } from 'vitest';
import type { SqliteLocalStore } from '../../../src/storage/sqlite/local-store.js';
import type { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { openLocalStore, testAdmission } from '../../shared/local-fixtures.js';

let sessions: SqliteSessionStore | undefined;
afterEach(async () => sessions?.close());

async function storeWithSession(): Promise<{ store: SqliteLocalStore; epoch: number }> {
  const rig = await openLocalStore(['L1']);
  sessions = rig.sessions;
  return rig;
}

const admission = (id: string) => testAdmission('L1', id, `text of ${id}`);
/** The settlement of admission a1 with one final answer and its token count. */
const answer = (epoch: number, generation: number, content: string, tokens: number) => ({
  admission_id: 'a1',
  epoch,
  generation,
  outcome: 'completed' as const,
  detail: null,
  messages: [{ role: 'assistant' as const, content, admission_id: 'a1' }],
  usage: { input_tokens: tokens - 3, output_tokens: 3, total_tokens: tokens },
});

const transcript = async () =>
  (await sessions!.loadTranscript('L1')).map((m) => [m.role, m.content, m.admission_id ?? null]);
const usage = async () => (await sessions!.lookupBySessionId('L1'))?.total_tokens;

describe('the turn path of the SQLite local store', () => {
  it('admits once per submission: a repeat is existing, other text a conflict, no session unknown', async () => {
    const { store } = await storeWithSession();
    const first = await store.admit(admission('a1'));
    expect(first).toMatchObject({ kind: 'admitted', admission: { admission_id: 'a1', state: 'queued' } });
    const repeat = await store.admit({ ...admission('a1'), admission_id: 'other-id' });
    expect(repeat).toMatchObject({ kind: 'existing', admission: { admission_id: 'a1' } });
    const changed = await store.admit({ ...admission('a1'), admission_id: 'x', digest: 'different' });
    expect(changed).toMatchObject({ kind: 'conflict', admission: { admission_id: 'a1' } });
    expect(await store.admit(testAdmission('no-such-session', 'a9'))).toEqual({ kind: 'unknown_session' });
    expect((await store.unsettled('L1')).map((a) => a.admission_id)).toEqual(['a1']);
  });

  it('a claim stores the admission text as the user message in the same commit', async () => {
    const { store, epoch } = await storeWithSession();
    await store.admit(admission('a1'));
    expect(await transcript()).toEqual([]);
    const claim = await store.claimNext('L1', epoch);
    expect(claim).toMatchObject({
      kind: 'claimed',
      generation: 1,
      session: { logical_id: 'L1', generation: 1 },
      input: { role: 'user', content: 'text of a1', admission_id: 'a1' },
    });
    expect(await transcript()).toEqual([['user', 'text of a1', 'a1']]);
    expect(await store.getAdmission('a1')).toMatchObject({ state: 'running', epoch, generation: 1 });
  });

  it('a settlement stores the final messages and adds the usage with it', async () => {
    const { store, epoch } = await storeWithSession();
    await store.admit(admission('a1'));
    await store.claimNext('L1', epoch);
    const accepted = await store.settle(answer(epoch, 1, 'the answer', 10));
    expect(accepted).toBe(true);
    expect(await transcript()).toEqual([
      ['user', 'text of a1', 'a1'],
      ['assistant', 'the answer', 'a1'],
    ]);
    expect(await usage()).toBe(10);
    expect(await store.getAdmission('a1')).toMatchObject({ state: 'completed' });
  });

  it('a stale settlement (REC-3) writes neither its messages nor its usage', async () => {
    const { store, epoch } = await storeWithSession();
    await store.admit(admission('a1'));
    await store.claimNext('L1', epoch);
    const accepted = await store.settle(answer(epoch, 2, 'from a stale turn', 99));
    expect(accepted).toBe(false);
    expect(await transcript()).toEqual([['user', 'text of a1', 'a1']]);
    expect(await usage()).toBe(0);
    expect(await store.getAdmission('a1')).toMatchObject({ state: 'running' });
  });

  it('admissions, claims and settlements of many sessions made in one tick share one commit', async () => {
    const { store, epoch } = await storeWithSession();
    const before = store.group.stats.batches;
    await Promise.all([store.admit(admission('a1')), store.admit(admission('a2'))]);
    expect(store.group.stats.batches).toBe(before + 1);
    // A claim queued in the same tick as the admission it finds sees it: they share the transaction.
    const [, claim] = await Promise.all([store.admit(admission('a3')), store.claimNext('L1', epoch)]);
    expect(claim).toMatchObject({ kind: 'claimed', admission: { admission_id: 'a1' } });
    expect(store.group.stats.batches).toBe(before + 2);
  });
});
