/**
 * Issue 29, metrics in a cluster (docs/observability.md): two instances on one PostgreSQL schema.
 * The owner of a session mid-turn holds its lease (`gatehouse_cluster_leases_held`); SIGKILLed, the
 * other instance takes the session over (`gatehouse_cluster_takeovers_total`) and recovers the turn
 * it interrupted (`gatehouse_recoveries_total`). Across processes there is no event to wait on: the
 * lease is polled in the database, as in cluster.test.ts.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireBuild } from './cli.js';
import { startCluster, type TestCluster } from './cluster-harness.js';
import { parseMetrics, total } from './metrics-fixture.js';
import { modelConfig, RecoveryRig, tempDir, type Ack, type Snapshot } from './recovery-harness.js';

beforeAll(requireBuild);

const rig = new RecoveryRig();
let cluster: TestCluster | null = null;
afterEach(async () => {
  await cluster?.cleanup();
  cluster = null;
  await rig.cleanup();
});

async function samples(url: string) {
  return parseMetrics(await (await fetch(`${url}/metrics`)).text());
}

describe('metrics of a cluster', () => {
  it('count the lease the owner holds, and the takeover and recovery on the instance that survives', async () => {
    const demo = await rig.model();
    cluster = await startCluster({ size: 2, config: modelConfig(demo, 'metrics: {enabled: true}') });
    const c = cluster;
    const onA = await c.daemon(0).connect();
    const { session_id } = await onA.call<Snapshot>('session.create', { cwd: tempDir(), yolo: true });

    demo.hold();
    await onA.call<Ack>('prompt.submit', { session_id, submission_id: 'held', text: 'held at the model' });
    await demo.waitForRequests(1);
    const owner = await c.lease(session_id);
    expect(owner?.owner_epoch).toBe(c.daemon(0).epoch);
    expect(total(await samples(c.daemon(0).url), 'gatehouse_cluster_leases_held')).toBe(1);
    expect(total(await samples(c.daemon(1).url), 'gatehouse_cluster_leases_held')).toBe(0);

    await c.kill(0);
    demo.release();
    await c.until(
      'the other instance takes the lease',
      () => c.lease(session_id),
      (l) => l !== null && l.token > owner!.token && l.owner_epoch === c.daemon(1).epoch,
    );
    // The lease is taken before the session is recovered under it, and counted once that is done.
    const after = await c.until(
      'the takeover is counted',
      () => samples(c.daemon(1).url),
      (now) => total(now, 'gatehouse_cluster_takeovers_total') === 1,
    );
    expect(total(after, 'gatehouse_cluster_takeovers_total')).toBe(1);
    // The interrupted turn was resumed at its model boundary, or left unknown: one either way.
    expect(total(after, 'gatehouse_recoveries_total', { engine: 'local' })).toBe(1);
  }, 240_000);
});
