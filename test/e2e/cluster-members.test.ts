/**
 * A share revoked across a cluster (issue 30, docs/identity.md "Sharing a session"): two real
 * daemons on one PostgreSQL schema, clients on real WebSockets with real tickets, the demo model.
 * An operator on A shares a session with a member connected to B, who follows its turns live there.
 * The operator revokes the share on A: the member's viewer on B is detached at once (told
 * `session.access_revoked`) and gets no event of the session after it, and every further call on B
 * is `not_found`; an operator viewing on B goes on seeing the session. The audit rows of the share
 * and its revocation are in the shared database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestTicket } from '../../src/surfaces/control/client.js';
import { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild } from './cli.js';
import { startCluster, type TestCluster } from './cluster-harness.js';
import { nextEvent, sessionEvent, type SessionEvent } from './gateway-harness.js';
import { modelConfig, RecoveryRig, tempDir } from './recovery-harness.js';

/** Two daemons start one after the other on a loaded machine: generous. */
const TIMEOUT = 240_000;
const EVENT_WAIT_MS = 90_000;
const rig = new RecoveryRig();
let cluster: TestCluster;

beforeAll(async () => {
  requireBuild();
  cluster = await startCluster({ size: 2, config: modelConfig(await rig.model()) });
}, TIMEOUT);
afterAll(async () => {
  await cluster?.cleanup();
  await rig.cleanup();
});

describe('cluster: a share revoked on one instance', () => {
  it(
    "detaches the member's live viewer on another instance at once, and their next call there is not_found",
    { timeout: TIMEOUT },
    async () => {
      const operatorA = await cluster.daemon(0).connect();
      const operatorB = await cluster.daemon(1).connect();
      const { ticket } = await requestTicket(
        cluster.daemon(1).layout.controlSocket,
        'interactive',
        undefined,
        'alice',
      );
      const alice = await GatewayClient.connect(cluster.daemon(1).url, ticket);
      try {
        const { session_id } = await operatorA.call<{ session_id: string }>('session.create', {
          cwd: tempDir(),
        });
        await operatorA.call('session.share', { session_id, member: 'member:alice', level: 'read' });
        await operatorA.call('session.resume', { session_id });
        await operatorB.call('session.resume', { session_id });
        await alice.call('session.resume', { session_id });

        // Shared, the member follows the session's turns on B as they run on A.
        const seenByAlice = nextEvent(
          alice,
          'turn.complete',
          (e) => e.session_id === session_id,
          EVENT_WAIT_MS,
        );
        await operatorA.call('prompt.submit', { session_id, submission_id: 'p1', text: 'first' });
        await seenByAlice;

        const aliceEvents: SessionEvent[] = [];
        alice.onNotification((n) => {
          const e = sessionEvent(n);
          if (e?.session_id === session_id) aliceEvents.push(e);
        });
        const revokedOnB = alice.next((n) => n.method === 'session.access_revoked', EVENT_WAIT_MS);
        const markOnB = nextEvent(
          operatorB,
          'share.revoked',
          (e) => e.session_id === session_id,
          EVENT_WAIT_MS,
        );
        const unshared = await operatorA.call<{ revoked: boolean; viewers_detached: number }>(
          'session.unshare',
          { session_id, member: 'member:alice' },
        );
        // Nobody of the member's watched on A; the viewer on B is B's to detach.
        expect(unshared).toMatchObject({ revoked: true, viewers_detached: 0 });
        expect((await revokedOnB).params).toEqual({ session_id });
        const mark = await markOnB;
        expect(mark.event).toMatchObject({ type: 'share.revoked', member: 'member:alice' });

        // The session goes on: the operator on B sees the next turn, the member nothing of it.
        const secondOnB = nextEvent(
          operatorB,
          'turn.complete',
          (e) => e.session_id === session_id,
          EVENT_WAIT_MS,
        );
        await operatorA.call('prompt.submit', { session_id, submission_id: 'p2', text: 'second' });
        await secondOnB;
        expect(aliceEvents.filter((e) => e.epoch === mark.epoch && e.seq >= mark.seq)).toEqual([]);

        for (const method of ['session.info', 'session.resume', 'session.messages'])
          await expect(alice.call(method, { session_id }), method).rejects.toMatchObject({
            reason: 'not_found',
          });
        const listed = await alice.call<{ sessions: { session_id: string }[] }>('session.list', {});
        expect(listed.sessions.map((s) => s.session_id)).not.toContain(session_id);

        const rows = await cluster.sql<{ principal: string; action: string; outcome: string }>(
          `SELECT principal, action, outcome FROM audit_log
            WHERE session_id = $1 AND action IN ('shared', 'unshared') ORDER BY id`,
          [session_id],
        );
        expect(rows).toEqual([
          { principal: 'native:owner', action: 'shared', outcome: 'ok' },
          { principal: 'native:owner', action: 'unshared', outcome: 'ok' },
        ]);
      } finally {
        await Promise.all([operatorA.close(), operatorB.close(), alice.close()]);
      }
    },
  );
});
