/** The torture harness's lineage invariant on a real SQLite file (the store's own behaviour: local-store.suite.ts). */
import { afterEach, describe, expect, it } from 'vitest';
import { checkLineages } from '../../../scripts/torture/lineage.js';
import { openLocalStore, testAdmission, type LocalStoreRig } from '../../shared/local-fixtures.js';

let rig: LocalStoreRig | undefined;
afterEach(async () => rig?.sessions.close());

const AT = '2026-12-01T10:00:00.000Z';

describe('the torture lineage invariant', () => {
  it('passes a clean reset and names a turn split across a reset and an unrecorded reset', async () => {
    rig = await openLocalStore(['A']);
    const { store, sessions, epoch } = rig;
    await store.admit(testAdmission('A', 'one'));
    await store.claimNext('A', epoch);
    await store.commitReset({
      logical_id: 'A',
      expected_session_id: 'A',
      new_session_id: 'A2',
      request_id: 'r1',
      at: AT,
    });
    const file = sessions.db.name;
    expect(checkLineages(file, ['A'], new Map([['A', 1]])).violations).toEqual([]);

    await sessions.appendToTranscript('A2', {
      role: 'assistant',
      content: 'late answer',
      admission_id: 'one',
    });
    expect(checkLineages(file, ['A'], new Map([['A', 2]])).violations).toEqual([
      'session A: 2 resets acknowledged, 1 in its lineage',
      'session A: turn one is split across a reset',
    ]);
  });
});
