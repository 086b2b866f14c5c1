/**
 * Events across the instances of a cluster (issue 14, docs/cluster.md): three real daemons with
 * `cluster.enabled` on one PostgreSQL schema, viewers on real WebSockets with real tickets. A
 * session made on A, viewed on B and C, a turn submitted on C: the viewer on B sees every event of
 * the turn, in order, under the same (epoch, seq) as the viewer on C, where it runs. A viewer that
 * leaves B catches up on C from its cursor with exactly what it missed, and so it does on B after
 * B is SIGKILLed and started again. Tickets and dashboard logins are per instance.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requestTicket } from '../../src/surfaces/control/client.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { httpPost, rejectedUpgrade, ticketProtocols } from '../unit/rpc/harness.js';
import { requireBuild } from './cli.js';
import { nextEvent, sessionEvent, type RunningDaemon, type SessionEvent } from './gateway-harness.js';
import {
  modelConfig,
  RecoveryRig,
  tempDir,
  turnStarts,
  type Ack,
  type Snapshot,
} from './recovery-harness.js';
import { dashboardConfig, PASSWORD } from './seed-fixture.js';
import { createTestSchema, inSchema, type TestSchema } from '../shared/postgres.js';

beforeAll(requireBuild);

const VAR = 'GH_TEST_CLUSTER_URL';
const CLUSTER = `store: {kind: postgres, url_env: ${VAR}}\ncluster: {enabled: true}`;
const rig = new RecoveryRig();
const schemas: TestSchema[] = [];
afterEach(async () => {
  await rig.cleanup();
  for (const s of schemas.splice(0)) await s.drop();
});

async function cluster(
  count: number,
  extra = '',
): Promise<{
  daemons: RunningDaemon[];
  start: (home?: string) => Promise<RunningDaemon>;
  schema: TestSchema;
}> {
  const schema = await createTestSchema();
  schemas.push(schema);
  const demo = await rig.model();
  const config = modelConfig(demo, CLUSTER, extra);
  const env = { [VAR]: schema.url };
  const start = (home?: string) => rig.daemon({ ...(home ? { home } : {}), config, env });
  const daemons: RunningDaemon[] = [];
  // One after another: the first migrates the schema, the others find it current.
  for (let i = 0; i < count; i++) daemons.push(await start());
  return { daemons, start, schema };
}

/** Every session event a client receives for `sessionId`, in arrival order. */
function recording(client: GatewayClient, sessionId: string): SessionEvent[] {
  const seen: SessionEvent[] = [];
  client.onNotification((n) => {
    const e = sessionEvent(n);
    if (e && e.session_id === sessionId) seen.push(e);
  });
  return seen;
}

const settledOf = (admissionId: string) => (e: SessionEvent) => e.event['admission_id'] === admissionId;

/** Waits (polling a list the client fills) until it holds an event numbered `seq`. */
async function reaches(events: SessionEvent[], seq: number): Promise<void> {
  while (!events.some((e) => e.seq >= seq)) await new Promise((r) => setTimeout(r, 20));
}

interface Since {
  epoch: number;
  last_seq: number;
  events: { seq: number; event: SessionEvent['event'] }[];
}

describe('cluster: events reach viewers on every instance under one numbering', () => {
  it('a turn submitted on C is seen on B and C alike; a viewer catches up on C from its B cursor, and on B after a SIGKILL', async () => {
    const { daemons, start, schema } = await cluster(3);
    const [a, b, c] = daemons as [RunningDaemon, RunningDaemon, RunningDaemon];
    const demo = rig.models[0]!;
    expect(new Set([a.epoch, b.epoch, c.epoch]).size).toBe(3);

    const onA = await a.connect();
    const created = await onA.call<Snapshot & { last_seq: number }>('session.create', {
      request_id: 'cluster-events',
      cwd: tempDir(),
    });
    const id = created.session_id;
    // The stream's epoch is the one the session's first snapshot named, on every instance.
    const streamEpoch = created.epoch;
    // A began the stream (its first snapshot), so the stream has A's authority epoch.
    expect(streamEpoch).toBe(a.epoch);

    const viewerB = await b.connect();
    const viewerC = await c.connect();
    const onB = recording(viewerB, id);
    const onC = recording(viewerC, id);
    const snapB = await viewerB.call<Snapshot & { last_seq: number }>('session.resume', { session_id: id });
    const snapC = await viewerC.call<Snapshot & { last_seq: number }>('session.resume', { session_id: id });
    expect(snapB.epoch).toBe(streamEpoch);
    expect(snapC.epoch).toBe(streamEpoch);
    expect(snapB.last_seq).toBe(snapC.last_seq);

    const settledB = nextEvent(viewerB, 'admission.settled', (e) => e.session_id === id, 60_000);
    const settledC = nextEvent(viewerC, 'admission.settled', (e) => e.session_id === id, 60_000);
    const first = await viewerC.call<Ack>('prompt.submit', {
      session_id: id,
      submission_id: 'one',
      text: 'seen across the cluster',
    });
    const [doneB, doneC] = await Promise.all([settledB, settledC]);
    expect(settledOf(first.admission_id)(doneB)).toBe(true);
    expect(doneB.seq).toBe(doneC.seq);
    // Every event of the turn, in order, numbered without a hole from the snapshot on, the same
    // on B as on C (which ran it), epoch included.
    const turnOnB = onB.filter((e) => e.seq <= doneB.seq);
    const turnOnC = onC.filter((e) => e.seq <= doneC.seq);
    expect(turnOnB.map((e) => e.seq)).toEqual(
      Array.from({ length: doneB.seq - snapB.last_seq }, (_, i) => snapB.last_seq + 1 + i),
    );
    expect(turnOnB).toEqual(turnOnC);
    expect(turnOnB.every((e) => e.epoch === streamEpoch)).toBe(true);
    const types = turnOnB.map((e) => e.event.type);
    // The whole turn: its admission, start, stored messages and text, completion and settlement.
    expect(types[0]).toBe('admission.queued');
    expect(types[types.length - 1]).toBe('admission.settled');
    for (const type of ['turn.start', 'message.stored', 'text.delta', 'turn.complete'])
      expect(types).toContain(type);
    expect(turnStarts(demo, first.admission_id)).toBe(1);

    // The viewer leaves B at its cursor; a second turn runs meanwhile.
    const cursor = onB[onB.length - 1]!;
    await viewerB.close();
    const settledAgain = nextEvent(viewerC, 'admission.settled', (e) => e.seq > cursor.seq, 60_000);
    await viewerC.call<Ack>('prompt.submit', { session_id: id, submission_id: 'two', text: 'while away' });
    const again = await settledAgain;
    const missed = onC.filter((e) => e.seq > cursor.seq && e.seq <= again.seq);
    expect(missed.length).toBeGreaterThan(1);

    // It reconnects to C with its cursor: exactly the missed events, same numbers.
    const back = await c.connect();
    const resumed = await back.call<Snapshot & { last_seq: number }>('session.resume', { session_id: id });
    expect(resumed.epoch).toBe(cursor.epoch);
    const since = await back.call<Since>('session.events.since', {
      session_id: id,
      epoch: cursor.epoch,
      after_seq: cursor.seq,
    });
    expect(since.epoch).toBe(streamEpoch);
    await reaches(onC, since.last_seq);
    expect(since.events).toEqual(
      onC
        .filter((e) => e.seq > cursor.seq && e.seq <= since.last_seq)
        .map((e) => ({ seq: e.seq, event: e.event })),
    );
    expect(since.events.slice(0, missed.length).map((e) => e.seq)).toEqual(missed.map((e) => e.seq));

    // B dies (SIGKILL) and starts again: the cursor from before still catches up there.
    await b.kill();
    const b2 = await start(b.home);
    expect(b2.epoch).toBeGreaterThan(c.epoch);
    const onB2 = await b2.connect();
    const afterRestart = await onB2.call<Snapshot & { last_seq: number }>('session.resume', {
      session_id: id,
    });
    expect(afterRestart.epoch).toBe(streamEpoch);
    const caughtUp = await onB2.call<Since>('session.events.since', {
      session_id: id,
      epoch: cursor.epoch,
      after_seq: cursor.seq,
    });
    expect(caughtUp.events.slice(0, since.events.length)).toEqual(since.events);

    // A cursor the stream no longer holds is told so, explicitly.
    await inSchema(schema.name, (client) =>
      client.query('DELETE FROM session_events WHERE logical_id = $1 AND seq <= $2', [id, cursor.seq + 1]),
    );
    const gap = await onB2
      .call('session.events.since', { session_id: id, epoch: cursor.epoch, after_seq: cursor.seq })
      .then(
        () => null,
        (error: { reason?: string }) => error.reason,
      );
    expect(gap).toBe('snapshot_required');
    const stale = await onB2
      .call('session.events.since', { session_id: id, epoch: b.epoch, after_seq: 0 })
      .then(
        () => null,
        (error: { reason?: string }) => error.reason,
      );
    expect(stale).toBe('snapshot_required');
  }, 240_000);
});

describe('cluster: tickets and dashboard logins are per instance', () => {
  it('a ticket or a login minted on A is refused on B as forged; on A it works', async () => {
    const { daemons } = await cluster(2, await dashboardConfig());
    const [a, b] = daemons as [RunningDaemon, RunningDaemon];
    const wsB = `${b.url.replace(/^http/, 'ws')}/api/ws`;
    const fromA = (await requestTicket(a.layout.controlSocket, 'interactive')).ticket;
    const refused = await rejectedUpgrade(wsB, ticketProtocols(fromA), { origin: b.url });
    expect({ status: refused.status, reason: refused.body.error.reason }).toEqual({
      status: 401,
      reason: 'forged',
    });

    const login = await httpPost(a.url, '/auth/login', { password: PASSWORD }, { origin: a.url });
    expect(login.status).toBe(200);
    const cookie = (login.headers['set-cookie'] as string[])[0]!.split(';')[0]!;
    const onA = await httpPost(a.url, '/api/auth/ws-ticket', undefined, { origin: a.url, cookie });
    expect(onA.status).toBe(200);
    const onB = await httpPost(b.url, '/api/auth/ws-ticket', undefined, { origin: b.url, cookie });
    expect(onB.status).toBe(401);
    expect((onB.body as { error: { reason: string } }).error.reason).toBe('forged');
    // A's dashboard ticket is not B's either.
    const dashTicket = onA.body['ticket'] as string;
    const dash = await rejectedUpgrade(`${wsB}?ticket=${dashTicket}`, [], { origin: b.url });
    expect(dash.body.error.reason).toBe('forged');
  }, 120_000);
});
