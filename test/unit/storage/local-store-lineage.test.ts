import { afterEach, describe, expect, it } from 'vitest';
import { checkLineages } from '../../../scripts/torture/lineage.js';
import { ReceiptGate } from '../../../src/domain/local/receipt-gate.js';
import { localSessionKey, receiptKey, type CreationReceipt } from '../../../src/domain/local/receipt.js';
import { SqliteLocalStore } from '../../../src/storage/sqlite/local-store.js';
import { openLocalStore, OWNER, testAdmission, type LocalStoreRig } from '../../shared/local-fixtures.js';

let rig: LocalStoreRig | undefined;
afterEach(async () => rig?.sessions.close());

const AT = '2026-12-01T10:00:00.000Z';

function gate(store: SqliteLocalStore) {
  const paused: string[] = [];
  return {
    gate: new ReceiptGate(store, 'default', { paused: (id, f, d) => paused.push(`${id} ${f}: ${d}`) }),
    paused,
  };
}

function reset(store: SqliteLocalStore, from: string, to: string, request_id = 'r1') {
  return store.commitReset({
    logical_id: 'A',
    expected_session_id: from,
    new_session_id: to,
    request_id,
    at: AT,
  });
}

describe('LIN-2 reset of a local session in one transaction', () => {
  it('moves receipt and route to an empty child, closes the parent, keeps admissions, and validates cold', async () => {
    rig = await openLocalStore(['A']);
    const { store, sessions, epoch } = rig;
    await store.admit(testAdmission('A', 'one'));
    await store.claimNext('A', epoch);
    await store.admit(testAdmission('A', 'two'));
    const before = await store.unsettled('A');

    const result = await reset(store, 'A', 'A2');
    expect(result.kind).toBe('reset');
    expect(await sessions.loadTranscript('A2')).toEqual([]);
    expect((await sessions.loadTranscript('A')).map((m) => m.content)).toEqual(['one']);
    expect((await store.readReceiptEvidence('A')).routedSessionId).toBe('A2');
    expect(await store.unsettled('A')).toEqual(before); // the running one and the queued one, untouched
    const route = (await sessions.lookupBySessionId('A2'))!;
    expect(route).toMatchObject({ session_key: localSessionKey('A'), is_fresh_reset: true, total_tokens: 0 });

    const { gate: g, paused } = gate(store);
    expect(await g.ensure('A')).toBe(true);
    expect(g.get('A')).toMatchObject({
      current_session_id: 'A2',
      lineage: [{ kind: 'reset', from: 'A', to: 'A2', at: AT, request_id: 'r1' }],
    });
    expect(paused).toEqual([]);
  });

  it('a repeat of the same request_id changes nothing; a stale expected transcript is refused', async () => {
    rig = await openLocalStore(['A']);
    const { store } = rig;
    await reset(store, 'A', 'A2');
    expect((await reset(store, 'A2', 'A3')).kind).toBe('duplicate');
    expect((await reset(store, 'A', 'A3', 'r2')).kind).toBe('moved');
    expect((await store.readReceiptEvidence('A')).routedSessionId).toBe('A2');
  });

  it('a crash inside the transaction leaves the old state whole', async () => {
    rig = await openLocalStore(['A']);
    const crashing = new SqliteLocalStore(rig.sessions.db, () => new Date(), {
      hit: (point) => {
        if (point === 'reset.transaction') throw new Error('killed');
      },
    });
    await expect(reset(crashing, 'A', 'A2')).rejects.toThrow('killed');
    expect((await rig.store.readReceiptEvidence('A')).routedSessionId).toBe('A');
    expect(await rig.store.readLineageFacts(['A', 'A2'])).toEqual(
      new Map([
        ['A', expect.objectContaining({ closed_at: null, children: [] })],
        ['A2', null],
      ]),
    );
    expect(await gate(rig.store).gate.ensure('A')).toBe(true);
  });
});

describe('LIN-3 planted rows fail closed at validation', () => {
  it('a fork row beside the recorded child pauses the session', async () => {
    rig = await openLocalStore(['A']);
    await reset(rig.store, 'A', 'A2');
    rig.sessions.db
      .prepare(
        `INSERT INTO sessions (session_id, session_key, created_at, parent_session_id, lineage_kind)
         VALUES ('FORK', ?, ?, 'A2', 'compression')`,
      )
      .run(localSessionKey('A'), AT);
    const { gate: g, paused } = gate(rig.store);
    expect(await g.ensure('A')).toBe(false);
    expect(paused).toEqual([
      expect.stringMatching(/^A fork: the current transcript A2 has an unrecorded child FORK/),
    ]);
    expect((await rig.store.getLocalSession('A'))?.paused_reason).toMatch(/^receipt fork/);
  });

  it('a receipt copied from another session (even with its logical id edited) never validates', async () => {
    rig = await openLocalStore(['A', 'B']);
    await reset(rig.store, 'A', 'A2');
    const body = JSON.parse(
      (
        rig.sessions.db.prepare('SELECT body FROM private_receipts WHERE key = ?').get(receiptKey('A')) as {
          body: string;
        }
      ).body,
    ) as CreationReceipt;
    rig.sessions.db.prepare('UPDATE private_receipts SET body = ? WHERE key = ?').run(
      JSON.stringify({
        ...body,
        logical_id: 'B',
        lineage: body.lineage.map((s) => ({ ...s, from: 'B' })),
      }),
      receiptKey('B'),
    );
    rig.sessions.db
      .prepare('UPDATE routes SET session_id = ? WHERE session_key = ?')
      .run('A2', localSessionKey('B'));
    const { gate: g, paused } = gate(rig.store);
    expect(await g.ensure('B')).toBe(false);
    expect(paused[0]).toMatch(/^B broken_lineage: transcript A2 belongs to another session/);
  });
});

describe('STO-2 rewind and retry of a local session, idempotent by request', () => {
  async function withTurns(): Promise<LocalStoreRig> {
    rig = await openLocalStore(['A']);
    for (const text of ['first', 'second']) {
      await rig.store.admit(testAdmission('A', text));
      const claim = await rig.store.claimNext('A', rig.epoch);
      if (claim.kind !== 'claimed') throw new Error(claim.kind);
      await rig.store.settle({
        admission_id: text,
        epoch: rig.epoch,
        generation: claim.generation,
        outcome: 'completed',
        detail: null,
        messages: [{ role: 'assistant', content: `answer to ${text}` }],
      });
    }
    return rig;
  }

  it('undo soft-deletes the last turn once, however often the request is repeated', async () => {
    const { store, sessions } = await withTurns();
    const undo = () => store.commitRewind({ logical_id: 'A', request_key: 'A:undo:u1', turns: 1, at: AT });
    expect(await undo()).toEqual({
      rewound_count: 2,
      turns_undone: 1,
      target_text: 'second',
      duplicate: false,
    });
    expect(await undo()).toEqual({
      rewound_count: 2,
      turns_undone: 1,
      target_text: 'second',
      duplicate: true,
    });
    expect((await sessions.loadTranscript('A')).map((m) => m.content)).toEqual(['first', 'answer to first']);
  });

  it('retry undoes the last turn and admits its text again in one transaction, once', async () => {
    const { store, sessions } = await withTurns();
    const retry = () =>
      store.commitRetry({
        admission: {
          admission_id: `x${Math.random()}`,
          logical_id: 'A',
          submission_id: 'retry:t1',
          submitter: OWNER,
          profile: 'default',
          binding: null,
        },
        request_key: 'A:retry:t1',
        at: AT,
      });
    const first = await retry();
    expect(first).toMatchObject({
      kind: 'retried',
      admission: { text: 'second', state: 'queued', submission_id: 'retry:t1' },
    });
    const again = await retry();
    expect(again).toMatchObject({
      kind: 'duplicate',
      admission: { admission_id: first.kind === 'retried' ? first.admission.admission_id : '' },
    });
    expect((await sessions.loadTranscript('A')).map((m) => m.content)).toEqual(['first', 'answer to first']);
    expect((await store.unsettled('A')).map((a) => a.text)).toEqual(['second']);
  });
});

describe('the torture lineage invariant', () => {
  it('passes a clean reset and names a turn split across a reset and an unrecorded reset', async () => {
    rig = await openLocalStore(['A']);
    const { store, sessions, epoch } = rig;
    await store.admit(testAdmission('A', 'one'));
    await store.claimNext('A', epoch);
    await reset(store, 'A', 'A2');
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
