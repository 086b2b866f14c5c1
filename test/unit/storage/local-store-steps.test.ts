import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SessionSource } from '../../../src/domain/session/source.js';
import { SqliteLocalStore } from '../../../src/storage/sqlite/local-store.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { testAdmission, testReceipt } from '../../shared/local-fixtures.js';

const origin = new SessionSource({ platform: 'local', chat_id: 'L1' }).toJSON();

describe('REC-7 step records on the SQLite local store', () => {
  it('fences every step record, clears the started mark with the result, and resumes an orphan under a new generation', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-steps-')), 'state.db');
    const sessions = SqliteSessionStore.open(file);
    const store = new SqliteLocalStore(sessions.db);
    const first = await store.openEpoch('first');
    await store.commitCreation({ receipt: testReceipt('L1'), origin, title: null, hidden: false });
    await store.admit(testAdmission('L1', 'a1'));
    const claim = await store.claimNext('L1', first);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    const fence = { admission_id: 'a1', epoch: first, generation: claim.generation };
    const prompt = { prompt_id: 'prm_1', type: 'approval' as const, tool_call_id: 'c1', requested_at: 'T' };

    expect(await store.recordPrompt({ ...fence, generation: 99 }, prompt)).toBe(false);
    expect(await store.recordPrompt(fence, prompt)).toBe(true);
    expect(await store.getAdmission('a1')).toMatchObject({ prompt, tool_started: null, resumes: 0 });
    // The started mark replaces the prompt it waited on.
    expect(await store.markToolStarted(fence, 'c1')).toBe(true);
    expect(await store.getAdmission('a1')).toMatchObject({ prompt: null, tool_started: 'c1' });

    // A crash: the next start finds the orphan with its mark, and takes it over.
    const second = await store.openEpoch('second');
    expect((await store.orphans(second)).map((a) => [a.admission_id, a.tool_started])).toEqual([
      ['a1', 'c1'],
    ]);
    const resumed = await store.resumeOrphan('a1', second);
    expect(resumed).toMatchObject({
      generation: claim.generation + 1,
      admission: { resumes: 1, epoch: second },
    });
    expect(await store.resumeOrphan('a1', second)).toBeNull();
    const now = { admission_id: 'a1', epoch: second, generation: resumed!.generation };
    // The old generation can write nothing; the new one stores the result and clears the mark.
    const result = { role: 'tool' as const, tool_call_id: 'c1', content: 'closed', admission_id: 'a1' };
    expect(await store.recordToolResult(fence, [result])).toBe(false);
    expect(await store.recordToolResult(now, [result])).toBe(true);
    expect(await store.getAdmission('a1')).toMatchObject({ tool_started: null, state: 'running' });
    const stored = await sessions.loadTranscript(testReceipt('L1').current_session_id);
    expect(stored.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['closed']);

    // An orphan recovery does not resume becomes unknown with its reason.
    const third = await store.openEpoch('third');
    expect(await store.markUnknown('a1', third, 'stale: old')).toBe(true);
    expect(await store.getAdmission('a1')).toMatchObject({ state: 'unknown', detail: 'stale: old' });
    await sessions.close();
  });
});
