/**
 * Leases and fencing on a real PostgreSQL (SCL-1), each test in a schema of its own: the generic
 * lease operations, two instances racing for one lease, expiry by the server's clock (planted by
 * moving expires_at, never by waiting), the turn path fenced by the lease token, and the LISTEN
 * connection's wake-ups across a lost connection.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { SessionSource } from '../../../src/domain/session/source.js';
import type { LeaseHolder } from '../../../src/domain/cluster/lease.js';
import { PostgresClusterStore } from '../../../src/storage/postgres/cluster-store.js';
import { PostgresLocalStore } from '../../../src/storage/postgres/local-store.js';
import { PgNotifications, schemaChannel } from '../../../src/storage/postgres/notifications.js';
import { PostgresSessionStore } from '../../../src/storage/postgres/session-store.js';
import { localSessionKey } from '../../../src/domain/local/receipt.js';
import { testAdmission, testReceipt } from '../../shared/local-fixtures.js';
import { createTestSchema, inSchema, type TestSchema } from '../../shared/postgres.js';

interface Instance {
  holder: LeaseHolder;
  sessions: PostgresSessionStore;
  local: PostgresLocalStore;
  cluster: PostgresClusterStore;
  listener: PgNotifications;
  held: Map<string, number>;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

async function schema(): Promise<TestSchema> {
  const s = await createTestSchema({ migrated: true });
  cleanups.push(() => s.drop());
  return s;
}

/** One instance on the schema: its own connection, epoch, LISTEN connection and fenced local store. */
async function instance(s: TestSchema, id: string): Promise<Instance> {
  const sessions = await PostgresSessionStore.open(s.url);
  const local = new PostgresLocalStore(sessions.db);
  const holder = { instance_id: id, epoch: await local.openEpoch(id) };
  // Named after the schema: killing this test's LISTEN connections never touches another test's.
  const listener = new PgNotifications(s.url, {
    minBackoffMs: 20,
    maxBackoffMs: 200,
    applicationName: `gatehouse-listen ${s.name}`,
  });
  const held = new Map<string, number>();
  local.fenceByLeases({ holder, token: (name) => held.get(name) ?? null });
  const cluster = new PostgresClusterStore(sessions.db, listener, holder);
  await cluster.register(id);
  cleanups.push(async () => {
    await listener.close();
    await sessions.close();
  });
  return { holder, sessions, local, cluster, listener, held };
}

async function createSession(i: Instance, id: string): Promise<void> {
  const origin = new SessionSource({ platform: 'local', chat_id: id }).toJSON();
  await i.local.commitCreation({ receipt: testReceipt(id), origin, title: null, hidden: false });
}

/** Plants the crash of the lease's owner: its lease expired a second ago by the server's clock. */
const expire = (s: TestSchema, name: string) =>
  inSchema(s.name, (c) =>
    c.query(`UPDATE cluster_leases SET expires_at = now() - interval '1 second' WHERE name = $1`, [name]),
  );

const leaseRow = (s: TestSchema, name: string) =>
  inSchema(s.name, async (c) => {
    const r = await c.query<{ owner_epoch: string | null; token: string; left_ms: number }>(
      `SELECT owner_epoch, token, (extract(epoch FROM expires_at - now()) * 1000)::float8 AS left_ms
         FROM cluster_leases WHERE name = $1`,
      [name],
    );
    return r.rows[0]!;
  });

describe('leases on PostgreSQL', () => {
  it('takes a free lease, refuses a live one, and hands an expired one over under a new token', async () => {
    const s = await schema();
    const a = await instance(s, 'a');
    const b = await instance(s, 'b');
    expect(await a.cluster.take('session', 's1', 10)).toEqual({
      kind: 'taken',
      token: 1,
      previous: null,
      fresh: true,
    });
    expect(await a.cluster.take('session', 's1', 10)).toEqual({ kind: 'mine', token: 1 });
    expect(await b.cluster.take('session', 's1', 10)).toEqual({ kind: 'held', owner: a.holder });
    await expire(s, 's1');
    expect(await b.cluster.take('session', 's1', 10)).toEqual({
      kind: 'taken',
      token: 2,
      previous: a.holder,
      fresh: false,
    });
    // The old owner's heartbeat no longer carries it: it learns the lease is gone.
    expect(await a.cluster.heartbeat(10)).toEqual([]);
    expect(await b.cluster.heartbeat(10)).toEqual([{ kind: 'session', name: 's1', token: 2 }]);
  });

  it('of two instances taking one expired lease at once, exactly one wins', async () => {
    const s = await schema();
    const [a, b, c] = [await instance(s, 'a'), await instance(s, 'b'), await instance(s, 'c')];
    await a.cluster.take('session', 's1', 10);
    await expire(s, 's1');
    const results = await Promise.all([
      b.cluster.take('session', 's1', 10),
      c.cluster.take('session', 's1', 10),
    ]);
    expect(results.map((r) => r.kind).sort()).toEqual(['held', 'taken']);
    expect((await leaseRow(s, 's1')).token).toBe('2');
  });

  it('a release frees the lease at once, and the next owner still gets a higher token', async () => {
    const s = await schema();
    const a = await instance(s, 'a');
    const b = await instance(s, 'b');
    await a.cluster.take('bot', 'telegram:1', 10);
    expect(await a.cluster.release('bot', 'telegram:1')).toBe(true);
    expect(await b.cluster.take('bot', 'telegram:1', 10)).toEqual({
      kind: 'taken',
      token: 2,
      previous: null,
      fresh: false,
    });
    expect(await a.cluster.release('bot', 'telegram:1')).toBe(false);
  });

  it('the heartbeat renews every lease held, in one statement, by the server clock', async () => {
    const s = await schema();
    const a = await instance(s, 'a');
    await a.cluster.take('session', 's1', 10);
    await a.cluster.take('session', 's2', 10);
    await expire(s, 's2'); // expired but never taken: still a's, renewed with the rest
    const held = await a.cluster.heartbeat(30);
    expect(held.map((l) => l.name).sort()).toEqual(['s1', 's2']);
    for (const name of ['s1', 's2']) expect((await leaseRow(s, name)).left_ms).toBeGreaterThan(10_000);
    const view = await a.cluster.instances(60);
    expect(view.map((i) => [i.name, i.leases])).toEqual([['a', { session: 2 }]]);
  });

  it('fences claims, settlements and step records by the lease token', async () => {
    const s = await schema();
    const a = await instance(s, 'a');
    const b = await instance(s, 'b');
    await createSession(a, 's1');
    await a.local.admit(testAdmission('s1', 'q1'));
    await a.local.admit(testAdmission('s1', 'q2'));
    // Without the lease nothing is claimed.
    expect(await a.local.claimNext('s1', a.holder.epoch)).toEqual({ kind: 'not_owner' });
    const taken = await a.cluster.take('session', 's1', 10);
    a.held.set('s1', taken.kind === 'taken' ? taken.token : -1);
    const claim = await a.local.claimNext('s1', a.holder.epoch);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    const fence = { admission_id: 'q1', epoch: a.holder.epoch, generation: claim.generation };
    expect(await a.local.markToolStarted(fence, 'call-1')).toBe(true);
    // a stops renewing; b takes the session over under a new token.
    await expire(s, 's1');
    const takeover = await b.cluster.take('session', 's1', 10);
    expect(takeover.kind).toBe('taken');
    b.held.set('s1', takeover.kind === 'taken' ? takeover.token : -1);
    // a's writes are refused from now on, though epoch and generation still match.
    expect(await a.local.recordPrompt(fence, null)).toBe(false);
    expect(
      await a.local.recordToolResult(fence, [{ role: 'tool', content: 'x', tool_call_id: 'call-1' }]),
    ).toBe(false);
    expect(await a.local.settle({ ...fence, outcome: 'completed', detail: null, messages: [] })).toBe(false);
    expect(await a.local.claimNext('s1', a.holder.epoch)).toEqual({ kind: 'not_owner' });
    // b sees a's running turn as its orphan (another epoch), scoped to the session it took.
    expect((await b.local.orphans(b.holder.epoch, 's1')).map((o) => o.admission_id)).toEqual(['q1']);
    expect(await b.local.markUnknown('q1', b.holder.epoch, 'tool_running')).toBe(true);
    // a, holding no lease, cannot mark anything either.
    expect(await a.local.markOrphansUnknown(a.holder.epoch, 's1')).toEqual([]);
    const row = await b.local.getAdmission('q1');
    expect([row?.state, row?.epoch]).toEqual(['unknown', a.holder.epoch]);
  });

  it('fences a compression by the lease token: refused, nothing written, once another instance took the session', async () => {
    const s = await schema();
    const a = await instance(s, 'a');
    const b = await instance(s, 'b');
    await createSession(a, 's1');
    const compression = (child: string) => {
      const receipt = testReceipt('s1');
      return {
        sessionKey: localSessionKey('s1'),
        parentSessionId: receipt.current_session_id,
        childSessionId: child,
        messages: [{ role: 'user' as const, content: 'summary' }],
        backoffSubject: 's1',
        receipt: {
          ...receipt,
          current_session_id: child,
          lineage: [{ kind: 'compression' as const, from: 's1', to: child, at: new Date().toISOString() }],
        },
      };
    };
    const route = () =>
      inSchema(s.name, async (c) => {
        const r = await c.query<{ session_id: string }>(
          'SELECT session_id FROM routes WHERE session_key = $1',
          [localSessionKey('s1')],
        );
        return r.rows[0]?.session_id;
      });
    // Without the lease nothing is written.
    expect(await a.local.commitCompression(compression('child-0'))).toBe(false);
    const taken = await a.cluster.take('session', 's1', 10);
    a.held.set('s1', taken.kind === 'taken' ? taken.token : -1);
    // a stops renewing; b takes the session over: a's compression (in flight) is refused.
    await expire(s, 's1');
    const takeover = await b.cluster.take('session', 's1', 10);
    b.held.set('s1', takeover.kind === 'taken' ? takeover.token : -1);
    expect(await a.local.commitCompression(compression('child-a'))).toBe(false);
    expect(await route()).toBe('s1');
    expect((await b.local.getLocalSession('s1'))?.logical_id).toBe('s1');
    // The owner's commits.
    expect(await b.local.commitCompression(compression('child-b'))).toBe(true);
    expect(await route()).toBe('child-b');
  });

  it('an expired lease fences its owner even before anyone takes it', async () => {
    const s = await schema();
    const a = await instance(s, 'a');
    await createSession(a, 's1');
    await a.local.admit(testAdmission('s1', 'q1'));
    const taken = await a.cluster.take('session', 's1', 10);
    a.held.set('s1', taken.kind === 'taken' ? taken.token : -1);
    await expire(s, 's1');
    expect(await a.local.claimNext('s1', a.holder.epoch)).toEqual({ kind: 'not_owner' });
  });

  it('lists sessions with work and no live owner, and releases an idle session only when nothing is queued', async () => {
    const s = await schema();
    const a = await instance(s, 'a');
    for (const id of ['s1', 's2', 's3']) await createSession(a, id);
    await a.local.admit(testAdmission('s1', 'q1'));
    await a.local.admit(testAdmission('s2', 'q2'));
    await a.cluster.take('session', 's2', 10);
    await a.cluster.take('session', 's3', 10);
    expect(await a.cluster.ownerlessSessions(10)).toEqual(['s1']);
    expect(await a.cluster.queuedUnder(10)).toEqual(['s2']);
    expect(await a.cluster.releaseIdleSession('s2')).toBe(false);
    expect(await a.cluster.releaseIdleSession('s3')).toBe(true);
    await expire(s, 's2');
    expect(await a.cluster.ownerlessSessions(10)).toEqual(['s1', 's2']);
  });

  it('releaseAll keeps the leases named and frees the rest', async () => {
    const s = await schema();
    const a = await instance(s, 'a');
    for (const id of ['s1', 's2', 's3']) await a.cluster.take('session', id, 10);
    expect((await a.cluster.releaseAll('session', ['s2'])).sort()).toEqual(['s1', 's3']);
    expect((await a.cluster.heartbeat(10)).map((l) => l.name)).toEqual(['s2']);
  });
});

describe('LISTEN/NOTIFY', () => {
  it('delivers notifications, and after its connection is killed reconnects and says so', async () => {
    const s = await schema();
    const a = await instance(s, 'a');
    const b = await instance(s, 'b');
    const got: string[] = [];
    let resubscribed = 0;
    let waiter: (() => void) | null = null;
    const next = () => new Promise<void>((resolve) => (waiter = resolve));
    b.cluster.subscribe(
      'gatehouse_test_wake',
      (payload) => {
        got.push(payload);
        waiter?.();
      },
      () => {
        resubscribed++;
        waiter?.();
      },
    );
    // The LISTEN is in force before anything is sent (a note committed earlier is not delivered).
    await b.listener.listening();
    let arrived = next();
    await a.cluster.notify('gatehouse_test_wake', 'one');
    await arrived;
    expect(got).toEqual(['one']);
    arrived = next();
    await inSchema(s.name, (c) =>
      c.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`,
        [`gatehouse-listen ${s.name}`],
      ),
    );
    await arrived;
    expect(resubscribed).toBe(1);
    arrived = next();
    await a.cluster.notify('gatehouse_test_wake', 'two');
    await arrived;
    expect(got).toEqual(['one', 'two']);
  });

  it('sends its LISTEN and UNLISTEN statements one at a time, even when many channels come and go at once', async () => {
    const s = await schema();
    const a = await instance(s, 'a');
    const b = await instance(s, 'b');
    await b.listener.listening();
    // pg queues a query given while another runs, a use it deprecates (pg 9 refuses it): count the
    // listening connection's statements in flight.
    let inFlight = 0;
    let most = 0;
    type Query = (this: pg.Client, ...args: unknown[]) => unknown;
    const proto = pg.Client.prototype as unknown as { query: Query };
    const query = proto.query;
    proto.query = function (...args) {
      const text = typeof args[0] === 'string' ? args[0] : '';
      if (!/^(UN)?LISTEN /.test(text)) return query.apply(this, args);
      most = Math.max(most, ++inFlight);
      return (query.apply(this, args) as Promise<unknown>).finally(() => inFlight--);
    };
    cleanups.push(() => Promise.resolve(void (proto.query = query)));
    const channels = Array.from({ length: 8 }, (_, n) => schemaChannel(s.name, `gatehouse_test_many_${n}`));
    const unsubscribes = channels.map((channel) => b.listener.subscribe(channel, () => undefined));
    for (const unsubscribe of unsubscribes.slice(0, 7)) unsubscribe();
    const got: string[] = [];
    let heard!: () => void;
    const arrived = new Promise<void>((resolve) => (heard = resolve));
    b.listener.subscribe(channels[0]!, (payload) => {
      got.push(payload);
      heard();
    });
    await b.listener.listening();
    await a.cluster.notify('gatehouse_test_many_0', 'still heard');
    await arrived;
    expect(got).toEqual(['still heard']);
    expect(most).toBe(1);
  });

  it("a channel is the schema's own: a note sent under the same name in another schema is not heard", async () => {
    const [s, other] = [await schema(), await schema()];
    const a = await instance(s, 'a');
    const elsewhere = await instance(other, 'a');
    const got: string[] = [];
    let heard!: () => void;
    const arrived = new Promise<void>((resolve) => (heard = resolve));
    a.cluster.subscribe('gatehouse_test_wake', (payload) => {
      got.push(payload);
      if (payload === 'mine') heard();
    });
    await a.listener.listening();
    // Notes of different transactions arrive in commit order: 'other', were it heard, comes first.
    await elsewhere.cluster.notify('gatehouse_test_wake', 'other');
    await a.cluster.notify('gatehouse_test_wake', 'mine');
    await arrived;
    expect(got).toEqual(['mine']);
  });

  it('names a channel after its schema, within the 63 bytes of an identifier', () => {
    expect(schemaChannel('gh_test_1', 'gatehouse_control')).toBe('gatehouse_control_gh_test_1');
    const long = 'x'.repeat(60);
    const named = schemaChannel(long, 'gatehouse_session_wake');
    expect(Buffer.byteLength(named)).toBeLessThanOrEqual(63);
    expect(named).toMatch(/^gatehouse_session_wake_[0-9a-f]{40}$/);
    expect(schemaChannel(long, 'gatehouse_session_wake')).toBe(named);
    expect(schemaChannel(`${long}y`, 'gatehouse_session_wake')).not.toBe(named);
  });
});
