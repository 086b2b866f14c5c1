/**
 * Background delegations in a cluster (docs/scheduling.md "Background delegations"): two real
 * daemons on one PostgreSQL schema. A delegation started on one instance for a session of the other
 * reports once; the instance holding the lease `delegations:<profile>` is SIGKILLed while a child
 * runs, the other takes the lease (and the sessions) over, and the child's result — completed, or
 * `unknown` when its turn ran on the instance that died — lands in the parent once.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild } from './cli.js';
import { startCluster, type TestCluster } from './cluster-harness.js';
import { modelConfig, quiet, RecoveryRig, tempDir, type Snapshot } from './recovery-harness.js';

const TIMEOUT = 240_000;

interface Delegation {
  delegation_id: string;
  state: string;
  outcome: string | null;
  child_session_id: string | null;
  result_admission_id: string | null;
}

async function until(client: GatewayClient, id: string, state: string): Promise<Delegation> {
  const end = Date.now() + 120_000;
  for (;;) {
    const { delegations } = await client.call<{ delegations: Delegation[] }>('delegation.list', {});
    const found = delegations.find((d) => d.delegation_id === id);
    if (found?.state === state) return found;
    if (Date.now() > end) throw new Error(`delegation ${id} is still ${JSON.stringify(found)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const results = (snap: Snapshot, id: string) =>
  snap.messages.filter((m) => m.role === 'user' && m.content?.startsWith(`Background delegation ${id} `));

describe('background delegations in a cluster', () => {
  const rig = new RecoveryRig();
  let cluster: TestCluster | null = null;
  beforeAll(requireBuild);
  afterAll(async () => {
    await cluster?.cleanup();
    await rig.cleanup();
  });

  it(
    'reports once from either instance, and once after the lease holder is SIGKILLed mid-child',
    { timeout: TIMEOUT },
    async () => {
      const demo = await rig.model();
      cluster = await startCluster({ size: 2, config: modelConfig(demo) });
      const a = await cluster.daemon(0).connect();
      const b = await cluster.daemon(1).connect();
      const cwd = tempDir();
      const { session_id: parent } = await a.call<Snapshot>('session.create', {
        cwd,
        yolo: true,
        toolsets: ['terminal', 'delegation'],
      });

      // Started on B for A's session: the result reaches the parent once.
      const { delegation: first } = await b.call<{ delegation: Delegation }>('delegation.start', {
        session_id: parent,
        request_id: 'first',
        task: 'hello from b',
      });
      const reported = await until(a, first.delegation_id, 'reported');
      expect(reported.outcome).toBe('completed');
      let snap = await quiet(a, parent);
      expect(results(snap, first.delegation_id)).toMatchObject([
        { admission_id: reported.result_admission_id },
      ]);

      // The lease holder dies while a child runs its command; the other instance carries it on.
      const [lease] = await cluster.sql<{ owner_epoch: string }>(
        "SELECT owner_epoch FROM cluster_leases WHERE kind = 'delegations'",
      );
      const holder = cluster.byEpoch(Number(lease!.owner_epoch));
      expect(holder).toBeGreaterThanOrEqual(0);
      const survivor = holder === 0 ? b : a;
      const { delegation: second } = await survivor.call<{ delegation: Delegation }>('delegation.start', {
        session_id: parent,
        request_id: 'second',
        task: 'run: touch started; while [ ! -e go ]; do sleep 0.05; done; echo second done',
      });
      const end = Date.now() + 60_000;
      while (!existsSync(join(cwd, 'started')) && Date.now() < end)
        await new Promise((r) => setTimeout(r, 50));
      await cluster.kill(holder);
      writeFileSync(join(cwd, 'go'), '');
      const after = await until(survivor, second.delegation_id, 'reported');
      expect(['completed', 'unknown']).toContain(after.outcome);
      snap = await quiet(survivor, parent);
      expect(results(snap, second.delegation_id)).toMatchObject([
        { admission_id: after.result_admission_id },
      ]);
      expect(results(snap, first.delegation_id)).toHaveLength(1);
    },
  );
});
