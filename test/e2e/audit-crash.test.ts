/**
 * An action and its audit row commit together (issue 30, docs/identity.md "The audit trail"): the
 * daemon is killed right after a prompt's admission commit (`admission.committed`), then right after
 * a reset's commit (`reset.committed`), each time before the caller is answered. The database of
 * the dead daemon holds the admission and the reset each with its row; nothing of either waited for
 * the answer. On both stores.
 */
import { describe, expect, it } from 'vitest';
import { localSessionKey } from '../../src/domain/local/receipt.js';
import { ConnectionClosedError } from '../../src/surfaces/client/rpc-client.js';
import { BACKENDS } from './gateway-harness.js';
import { died, modelConfig, quiet, tempDir, useRecoveryRig, type Snapshot } from './recovery-harness.js';
import { storeRows } from './store-rows.js';

const rig = useRecoveryRig();

describe.each(BACKENDS)('audit rows survive a crash with their action on %s', (store) => {
  it('a prompt admitted and a reset committed just before the daemon died each have their row', async () => {
    rig.store = store;
    const config = modelConfig(await rig.model());
    let d = await rig.daemon({ config, env: { GATEHOUSE_TEST_FAULTS: 'admission.committed' } });
    let client = await d.connect();
    const { session_id } = await client.call<Snapshot>('session.create', { cwd: tempDir() });
    const lost = await client
      .call('prompt.submit', { session_id, submission_id: 's-1', text: 'just before the end' })
      .catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(ConnectionClosedError);
    await died(d);

    d = await rig.daemon({ home: d.home, config, env: { GATEHOUSE_TEST_FAULTS: 'reset.committed' } });
    client = await d.connect();
    // The admitted prompt runs after the restart; a reset waits for it to settle.
    await quiet(client, session_id);
    const lostReset = await client
      .call('session.reset', { session_id, request_id: 'r-1' })
      .catch((e: unknown) => e);
    expect(lostReset).toBeInstanceOf(ConnectionClosedError);
    await died(d);

    const db = await storeRows(d, store);
    try {
      const admissions = await db.all<{ submission_id: string }>(
        'SELECT submission_id FROM admissions WHERE logical_id = ?',
        session_id,
      );
      expect(admissions.map((a) => a.submission_id)).toEqual(['s-1']);
      // The reset moved the session's route to a new, empty transcript.
      const routes = await db.all<{ session_id: string }>(
        'SELECT session_id FROM routes WHERE session_key = ?',
        localSessionKey(session_id),
      );
      expect(routes).toHaveLength(1);
      expect(routes[0]!.session_id).not.toBe(session_id);
      const rows = await db.all<{
        principal: string;
        action: string;
        outcome: string;
        detail: string | null;
      }>(
        'SELECT principal, action, outcome, detail FROM audit_log WHERE session_id = ? ORDER BY id',
        session_id,
      );
      expect(rows.map((r) => [r.principal, r.action, r.outcome])).toEqual([
        ['native:owner', 'created', 'ok'],
        ['native:owner', 'submitted', 'ok'],
        ['native:owner', 'reset', 'ok'],
      ]);
      expect(JSON.parse(rows[1]!.detail!)).toEqual({ submission_id: 's-1' });
    } finally {
      await db.close();
    }
  });
});
