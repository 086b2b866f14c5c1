/**
 * The cluster member on a real PostgreSQL (SCL-1), each test in a schema of its own, with the local
 * sessions replaced by a recorder (the scheduler is tested on its own). The lease is long (300 s:
 * no scan or heartbeat fires during a test), so whatever happens comes from a wake-up or a call.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  ClusterMember,
  RESCAN_CHANNEL,
  type ClusterMemberOptions,
  type MemberSessions,
} from '../../../src/domain/cluster/member.js';
import { SessionSource } from '../../../src/domain/session/source.js';
import { PostgresClusterStore } from '../../../src/storage/postgres/cluster-store.js';
import { PostgresLocalStore } from '../../../src/storage/postgres/local-store.js';
import { PgNotifications } from '../../../src/storage/postgres/notifications.js';
import { PostgresSessionStore } from '../../../src/storage/postgres/session-store.js';
import { testAdmission, testReceipt } from '../../shared/local-fixtures.js';
import { createTestSchema, type TestSchema } from '../../shared/postgres.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

/** What the member asked of the local sessions, and a way to wait for the next call. */
class Recorder implements MemberSessions {
  readonly calls: string[] = [];
  private waiters: { match: string; resolve: () => void }[] = [];
  busyNow = false;

  private record(call: string): void {
    this.calls.push(call);
    for (const w of this.waiters.filter((w) => w.match === call)) w.resolve();
    this.waiters = this.waiters.filter((w) => w.match !== call);
  }

  next(call: string): Promise<void> {
    if (this.calls.includes(call)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ match: call, resolve }));
  }

  /** While set, a recovery waits for it (a recovery reading a dead owner's turn from the store). */
  recoveryGate: Promise<void> | null = null;

  async recoverSession(logicalId: string) {
    this.record(`recover ${logicalId}`);
    if (this.recoveryGate) await this.recoveryGate;
    this.record(`recovered ${logicalId}`);
    return { unknown: [], resumed: [] };
  }
  kick(logicalId: string): void {
    this.record(`kick ${logicalId}`);
  }
  interruptForLease(logicalId: string): boolean {
    this.record(`interrupt ${logicalId}`);
    return true;
  }
  busy(): boolean {
    return this.busyNow;
  }
  /** Sessions whose api_key this instance holds (LOC-5). */
  readonly keys = new Set<string>();
  holdsKey(logicalId: string): boolean {
    return this.keys.has(logicalId);
  }
  keyedSessions(): Iterable<string> {
    return this.keys;
  }
}

const quietLog = { info: () => undefined, warn: () => undefined, error: () => undefined };

interface Node {
  member: ClusterMember;
  cluster: PostgresClusterStore;
  sessions: Recorder;
  local: PostgresLocalStore;
  failed: { now: boolean };
  fatal: Promise<string>;
}

async function node(
  s: TestSchema,
  id: string,
  now?: () => number,
  log: ClusterMemberOptions['log'] = quietLog,
): Promise<Node> {
  const store = await PostgresSessionStore.open(s.url);
  const local = new PostgresLocalStore(store.db);
  const holder = { instance_id: id, epoch: await local.openEpoch(id) };
  const listener = new PgNotifications(s.url);
  const sessions = new Recorder();
  const failed = { now: false };
  let fatal!: (reason: string) => void;
  const fatalCalled = new Promise<string>((resolve) => (fatal = resolve));
  const cluster = new PostgresClusterStore(store.db, listener, holder);
  const member = new ClusterMember({
    store: cluster,
    leaseS: 300,
    name: id,
    sessions,
    log,
    storeFailed: () => failed.now,
    fatal,
    ...(now ? { now } : {}),
  });
  local.fenceByLeases({ holder, token: (name) => member.token(name) });
  cleanups.push(async () => {
    await member.stop();
    await listener.close();
    await store.close();
  });
  await member.start();
  // Its wake-ups are heard from now on: the LISTEN statements member.start sent are in force.
  await listener.listening();
  return { member, cluster, sessions, local, failed, fatal: fatalCalled };
}

async function session(n: Node, id: string, queued: string[] = []): Promise<void> {
  const origin = new SessionSource({ platform: 'local', chat_id: id }).toJSON();
  await n.local.commitCreation({ receipt: testReceipt(id), origin, title: null, hidden: false });
  for (const q of queued) await n.local.admit(testAdmission(id, q));
}

/** Waits until a take of the session has run its recovery and kicked the session's queue. */
async function taken(n: Node, id: string): Promise<void> {
  await n.sessions.next(`recovered ${id}`);
  await new Promise((resolve) => setImmediate(resolve));
}

async function schema(): Promise<TestSchema> {
  const s = await createTestSchema({ migrated: true });
  cleanups.push(() => s.drop());
  return s;
}

describe('ClusterMember', () => {
  it('takes a free session and recovers it; work for a session another holds wakes that owner', async () => {
    const s = await schema();
    const a = await node(s, 'a');
    const c = await node(s, 'c');
    await session(a, 's1', ['q1']);
    a.member.elsewhere('s1');
    await taken(a, 's1');
    expect(a.member.owns('s1')).toBe(true);
    expect(a.sessions.calls).toEqual(['recover s1', 'recovered s1', 'kick s1']);
    a.sessions.calls.splice(0);
    // C admitted work for s1: it cannot take the lease, so it wakes A, which kicks the session.
    c.member.elsewhere('s1');
    await a.sessions.next('kick s1');
    expect(c.member.owns('s1')).toBe(false);
    expect(c.sessions.calls).toEqual([]);
  });

  it('a session taken over is not run here until its recovery is done: a control waits for it, a kick is not lost', async () => {
    const s = await schema();
    const a = await node(s, 'a');
    await session(a, 's1', ['q1']);
    let recover!: () => void;
    a.sessions.recoveryGate = new Promise((resolve) => (recover = resolve));
    // A wake-up (or a scan) takes the lease; the recovery reads the dead owner's turn meanwhile.
    a.member.elsewhere('s1');
    await a.sessions.next('recover s1');
    // The lease is held (the recovery's writes are fenced by it), but the session is not A's to run:
    // a claim or a compression let in now would act beside the turn the recovery is about to resume.
    expect(a.member.token('s1')).not.toBeNull();
    expect(a.member.owns('s1')).toBe(false);
    // A control arriving now waits for the recovery instead of running beside it.
    let acquired: boolean | null = null;
    const control = a.member.acquire('s1').then((ok) => (acquired = ok));
    // Work admitted now kicks the session: it finds the take in flight (not a loop of kicks).
    a.member.elsewhere('s1');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(acquired).toBeNull();
    expect(a.sessions.calls).toEqual(['recover s1']);
    recover();
    await control;
    expect(acquired).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    // Once recovered, the queue is kicked: the work admitted during the recovery runs.
    expect(a.sessions.calls).toEqual(['recover s1', 'recovered s1', 'kick s1']);
    expect(a.member.owns('s1')).toBe(true);
  });

  it('a control acquires a free session, and is refused one another instance holds', async () => {
    const s = await schema();
    const a = await node(s, 'a');
    const c = await node(s, 'c');
    await session(a, 's1');
    expect(await a.member.acquire('s1')).toBe(true);
    expect(await c.member.acquire('s1')).toBe(false);
    expect(a.sessions.calls).toEqual(['recover s1', 'recovered s1', 'kick s1']);
  });

  it('an idle session gives its lease back, and the next instance takes it', async () => {
    const s = await schema();
    const a = await node(s, 'a');
    const c = await node(s, 'c');
    await session(a, 's1');
    a.member.elsewhere('s1');
    await taken(a, 's1');
    await a.member.idle('s1');
    c.member.elsewhere('s1');
    await taken(c, 's1');
    expect(a.member.owns('s1')).toBe(false);
    expect(c.member.token('s1')).toBe(2);
  });

  it('a session whose api_key is held here keeps its lease while idle: work admitted elsewhere wakes this instance', async () => {
    const s = await schema();
    const a = await node(s, 'a');
    const c = await node(s, 'c');
    await session(a, 's1');
    a.sessions.keys.add('s1');
    expect(await a.member.acquire('s1')).toBe(true);
    await a.member.idle('s1');
    expect(a.member.owns('s1')).toBe(true);
    // C admitted work for s1: A still holds the lease, so C wakes A rather than taking the session.
    c.member.elsewhere('s1');
    await a.sessions.next('kick s1');
    expect(c.member.owns('s1')).toBe(false);
    expect(c.sessions.calls).toEqual([]);
    expect(await c.member.acquire('s1')).toBe(false);
  });

  it("the instance holding a session's api_key takes its free lease back at a scan, and gives it up when it drains", async () => {
    const s = await schema();
    const a = await node(s, 'a');
    const c = await node(s, 'c');
    await session(a, 's1');
    // C holds s1 (it took it before the key was supplied again on A, say); C has no key, so it lets
    // the lease go once the queue is empty, and A's next scan takes it.
    expect(await c.member.acquire('s1')).toBe(true);
    a.sessions.keys.add('s1');
    await c.member.idle('s1');
    expect(c.member.owns('s1')).toBe(false);
    await c.cluster.notify(RESCAN_CHANNEL, 'test');
    await taken(a, 's1');
    expect(a.member.owns('s1')).toBe(true);
    // A drains: its key goes with it, so the lease is released like any other and C may take it.
    a.member.beginDrain();
    expect(await a.member.handOver([])).toEqual(['s1']);
    c.sessions.calls.splice(0);
    c.member.elsewhere('s1');
    await taken(c, 's1');
    expect(c.member.owns('s1')).toBe(true);
  });

  it('a drain releases the leases at once and the others take the queued sessions over', async () => {
    const s = await schema();
    const a = await node(s, 'a');
    const b = await node(s, 'b');
    await session(a, 's1', ['q1']);
    await session(a, 's2', ['q2']);
    a.member.elsewhere('s1');
    a.member.elsewhere('s2');
    await taken(a, 's1');
    await taken(a, 's2');
    a.member.beginDrain();
    expect((await a.member.handOver(['s2'])).sort()).toEqual(['s1']);
    // s1 is taken over by B now (a lease of 300 s never expired); s2 stays A's (its turn still runs).
    await taken(b, 's1');
    expect(b.member.owns('s1')).toBe(true);
    expect(b.member.owns('s2')).toBe(false);
  });

  it('a cold start takes over only sessions no live instance holds', async () => {
    const s = await schema();
    const a = await node(s, 'a');
    await session(a, 's1', ['q1']);
    await session(a, 's2', ['q2']);
    a.member.elsewhere('s1');
    await taken(a, 's1');
    // A runs s1's turn; s2 has queued work and no owner (its instance died before taking it).
    expect(
      await a.local.claimNext('s1', (await a.local.getAdmission('q1'))!.epoch ?? a.member.holder.epoch),
    ).toMatchObject({
      kind: 'claimed',
    });
    const b = await node(s, 'b');
    expect(b.sessions.calls.filter((call) => call.startsWith('recover '))).toEqual(['recover s2']);
    expect(b.sessions.calls.some((call) => call.endsWith(' s1'))).toBe(false);
    expect(b.member.owns('s1')).toBe(false);
    expect(await a.local.getAdmission('q1')).toMatchObject({
      state: 'running',
      epoch: a.member.holder.epoch,
    });
  });

  it('a lost database connection stops every running turn and asks the daemon to exit', async () => {
    const s = await schema();
    const a = await node(s, 'a');
    await session(a, 's1', ['q1']);
    a.member.elsewhere('s1');
    await taken(a, 's1');
    a.failed.now = true;
    expect(await a.fatal).toBe('the database connection was lost');
    expect(a.sessions.calls).toContain('interrupt s1');
    expect(a.member.owns('s1')).toBe(false);
    expect(a.member.sideEffectsAllowed('s1')).toBe(false);
  });

  it('a tool refused for a stalled renewal stops the member in the same call, before any renewal can land', async () => {
    const s = await schema();
    const clock = { ms: 1_000_000 };
    const a = await node(s, 'a', () => clock.ms);
    await session(a, 's1', ['q1']);
    a.member.elsewhere('s1');
    await taken(a, 's1');
    expect(a.member.sideEffectsAllowed('s1')).toBe(true);
    expect(a.member.sideEffectsAllowed('s2')).toBe(false); // not held here
    // No renewal for more than lease_s / 2 (150 s), the watchdog's tick not come yet.
    clock.ms += 151_000;
    expect(a.sessions.calls).not.toContain('interrupt s1');
    expect(a.member.sideEffectsAllowed('s1')).toBe(false);
    // Refused and stopped at once: the turn is stopped for the next owner, the daemon told to exit.
    expect(a.member.state).toBe('failed');
    expect(a.sessions.calls).toContain('interrupt s1');
    // Nothing more is stored under its leases (the refused tool's result included).
    expect(a.member.token('s1')).toBeNull();
    expect(await a.fatal).toMatch(/could not be renewed for more than lease_s\/2/);
  });

  it('a stall says whether a renewal was waiting on the store and how late the watchdog ran', async () => {
    const s = await schema();
    const clock = { ms: 1_000_000 };
    const errors: Record<string, unknown>[] = [];
    const log = { ...quietLog, error: (fields: Record<string, unknown>) => void errors.push(fields) };
    const a = await node(s, 'a', () => clock.ms, log);
    expect(a.member.sideEffectsAllowed('s1')).toBe(false); // a first tick of the watchdog
    clock.ms += 151_000;
    a.member.sideEffectsAllowed('s1');
    expect(await a.fatal).toMatch(/could not be renewed for more than lease_s\/2/);
    // No renewal was in flight (the heartbeat's interval is 50 s here): the watchdog's own ticks
    // were 151 s apart, which is what a loop that ran late looks like.
    expect(errors).toContainEqual(
      expect.objectContaining({
        since_renewal_ms: 151_000,
        renewal_in_flight_ms: null,
        longest_watch_gap_ms: 151_000,
      }),
    );
  });

  it('a draining instance lets the turns it still holds start their tools (the drain lets them finish)', async () => {
    const s = await schema();
    const a = await node(s, 'a');
    await session(a, 's1', ['q1']);
    a.member.elsewhere('s1');
    await taken(a, 's1');
    a.member.beginDrain();
    expect(a.member.sideEffectsAllowed('s1')).toBe(true);
    expect(await a.member.handOver(['s1'])).toEqual([]);
    expect(a.member.sideEffectsAllowed('s1')).toBe(true);
  });
});
