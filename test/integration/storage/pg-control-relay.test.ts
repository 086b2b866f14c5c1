/**
 * The control relay (issue 14) on a real PostgreSQL, each test in a schema of its own: a call
 * forwarded by one instance runs once on the lease owner and its result or refusal comes back
 * unchanged; an owner that does not answer in time is owner_unreachable and never runs the call
 * later; answered and expired rows are deleted. The route decision is tested without a database.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { makePrincipal, OPERATOR_CAPABILITIES, type Principal } from '../../../src/domain/auth/principal.js';
import { ControlRelay, routeControl, type RelayedKind } from '../../../src/domain/cluster/relay.js';
import { GatewayError } from '../../../src/domain/errors.js';
import { PostgresClusterStore } from '../../../src/storage/postgres/cluster-store.js';
import { PostgresControlRelayStore } from '../../../src/storage/postgres/control-relay-store.js';
import { PostgresLocalStore } from '../../../src/storage/postgres/local-store.js';
import { PgNotifications } from '../../../src/storage/postgres/notifications.js';
import { PostgresSessionStore } from '../../../src/storage/postgres/session-store.js';
import { createTestSchema, inSchema, type TestSchema } from '../../shared/postgres.js';

interface Call {
  kind: RelayedKind;
  principal: Principal | null;
  params: Record<string, unknown>;
}

type Execute = (call: Call) => Promise<unknown>;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

async function schema(): Promise<TestSchema> {
  const s = await createTestSchema({ migrated: true });
  cleanups.push(() => s.drop());
  return s;
}

const silent = { warn: () => undefined };

async function instance(s: TestSchema, id: string, execute: Execute, timeoutMs = 30_000) {
  const sessions = await PostgresSessionStore.open(s.url);
  const local = new PostgresLocalStore(sessions.db);
  const holder = { instance_id: id, epoch: await local.openEpoch(id) };
  const listener = new PgNotifications(s.url, { applicationName: `gatehouse-listen ${s.name}` });
  const cluster = new PostgresClusterStore(sessions.db, listener, holder);
  await cluster.register(id);
  const store = new PostgresControlRelayStore(sessions.db, listener, holder);
  const calls: Call[] = [];
  const relay = new ControlRelay({
    store,
    log: silent,
    timeoutMs,
    execute: (kind, principal, params) => {
      const call = { kind, principal, params };
      calls.push(call);
      return execute(call);
    },
  });
  cleanups.push(async () => {
    relay.stop();
    await listener.close();
    await sessions.close();
  });
  return {
    holder,
    cluster,
    store,
    relay,
    calls,
    listener,
    /** Starts serving, and waits until its LISTEN is in force: a request sent then wakes it. */
    async start() {
      relay.start();
      await listener.listening();
    },
  };
}

const principal = makePrincipal('native:alice', 'native', 'default', OPERATOR_CAPABILITIES);
const rows = (s: TestSchema) =>
  inSchema(s.name, async (c) => (await c.query('SELECT id FROM control_requests')).rows.length);

describe('routeControl', () => {
  const self = { instance_id: 'b', epoch: 2 };
  const owner = { instance_id: 'a', epoch: 1 };
  it('runs here when the turn runs here, when nobody holds the lease, or when this instance does', () => {
    expect(routeControl({ runsHere: true, self, owner })).toEqual({ kind: 'local' });
    expect(routeControl({ runsHere: false, self, owner: null })).toEqual({ kind: 'local' });
    expect(routeControl({ runsHere: false, self, owner: self })).toEqual({ kind: 'local' });
  });
  it('forwards to the live owner otherwise', () => {
    expect(routeControl({ runsHere: false, self, owner })).toEqual({ kind: 'forward', owner });
  });
});

describe('the control relay on PostgreSQL', () => {
  it('runs a forwarded call once on the lease owner, with the caller principal, and returns its result', async () => {
    const s = await schema();
    const a = await instance(s, 'a', () => Promise.resolve({ status: 'resolved', prompt_id: 'p1' }));
    const b = await instance(s, 'b', () => Promise.reject(new Error('b runs nothing')));
    await a.start();
    await b.start();
    await a.cluster.take('session', 's1', 30);
    const route = await b.relay.route('s1', false);
    expect(route).toEqual({ kind: 'forward', owner: a.holder });
    expect(await a.relay.route('s1', false)).toEqual({ kind: 'local' });
    expect(await b.relay.route('nobody-holds-this', false)).toEqual({ kind: 'local' });

    const params = { session_id: 's1', execution_generation: 3, prompt_id: 'p1', choice: 'once' };
    const result = await b.relay.forward(a.holder, 'approval.respond', 's1', principal, params);
    expect(result).toEqual({ status: 'resolved', prompt_id: 'p1' });
    expect(a.calls).toEqual([{ kind: 'approval.respond', principal, params }]);
    expect(b.calls).toEqual([]);
    expect(b.relay.inFlight).toBe(0);
    expect(await rows(s)).toBe(0);
  });

  it("hands the owner's refusal to the caller with the same reason and details", async () => {
    const s = await schema();
    const a = await instance(s, 'a', () =>
      Promise.reject(new GatewayError('stale_generation', 'not the running turn', { running: 4 })),
    );
    const b = await instance(s, 'b', () => Promise.resolve(null));
    await a.start();
    await b.start();
    const params = { session_id: 's1', execution_generation: 3 };
    const error = await b.relay
      .forward(a.holder, 'session.interrupt', 's1', principal, params)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({
      reason: 'stale_generation',
      message: 'not the running turn',
      details: { running: 4 },
    });
  });

  it('answers owner_unreachable when the owner does not answer in time, and the owner never runs it later', async () => {
    const s = await schema();
    const a = await instance(s, 'a', () => Promise.resolve('ran'));
    const b = await instance(s, 'b', () => Promise.resolve(null), 500);
    await b.start();
    // a's relay is not serving: the request waits in the table until it expires.
    const error = await b.relay
      .forward(a.holder, 'session.interrupt', 's1', principal, { session_id: 's1', execution_generation: 1 })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      reason: 'owner_unreachable',
      details: { retryable: true, owner_instance: 'a', owner_epoch: a.holder.epoch },
    });
    expect(await a.store.claim(10)).toEqual([]);
    await a.start();
    await a.store.prune(0);
    expect(a.calls).toEqual([]);
    expect(await rows(s)).toBe(0);
  });

  it('carries the session controls: each runs once on the owner with the caller principal', async () => {
    const s = await schema();
    const a = await instance(s, 'a', (call) =>
      Promise.resolve({ session_id: call.params['session_id'], duplicate: false }),
    );
    const b = await instance(s, 'b', () => Promise.reject(new Error('b runs nothing')));
    await a.start();
    await b.start();
    for (const kind of [
      'session.reset',
      'session.undo',
      'session.retry',
      'session.compress',
      'checkpoint.restore',
    ] as const) {
      const params = { session_id: 's1', request_id: `r-${kind}` };
      await expect(b.relay.forward(a.holder, kind, 's1', principal, params)).resolves.toEqual({
        session_id: 's1',
        duplicate: false,
      });
    }
    expect(a.calls.map((c) => c.kind)).toEqual([
      'session.reset',
      'session.undo',
      'session.retry',
      'session.compress',
      'checkpoint.restore',
    ]);
    expect(a.calls.every((c) => c.principal?.subject === principal.subject)).toBe(true);
    expect(await rows(s)).toBe(0);
  });

  it('waits past its deadline for a call the owner started while the owner holds the lease; a long call holds up no other request', async () => {
    const s = await schema();
    let finish!: (value: unknown) => void;
    const long = new Promise((resolve) => (finish = resolve));
    const a = await instance(s, 'a', (call) =>
      call.kind === 'session.compress' ? long : Promise.resolve({ status: 'resolved' }),
    );
    const b = await instance(s, 'b', () => Promise.resolve(null), 300);
    await a.start();
    await b.start();
    await a.cluster.take('session', 's1', 30);
    const compressing = b.relay.forward(a.holder, 'session.compress', 's1', principal, { session_id: 's1' });
    // Another request (the approval a restore waits for, say) is served while the long one runs.
    await expect(
      b.relay.forward(a.holder, 'approval.respond', 's1', principal, { session_id: 's1' }),
    ).resolves.toEqual({ status: 'resolved' });
    // Well past the 300 ms deadline plus its grace, the started call is still awaited…
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(b.relay.inFlight).toBe(1);
    // …and its real answer reaches the caller.
    finish({ compressed: true });
    await expect(compressing).resolves.toEqual({ compressed: true });
    expect(a.calls.map((c) => c.kind)).toEqual(['session.compress', 'approval.respond']);
  });

  it('a started call whose owner lost the lease is owner_unreachable', async () => {
    const s = await schema();
    const a = await instance(s, 'a', () => new Promise(() => undefined));
    const b = await instance(s, 'b', () => Promise.resolve(null), 300);
    await a.start();
    await b.start();
    await a.cluster.take('session', 's1', 30);
    const compressing = b.relay
      .forward(a.holder, 'session.compress', 's1', principal, { session_id: 's1' })
      .catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(a.calls).toHaveLength(1);
    // The owner dies (planted: its lease expires by the server's clock).
    await inSchema(s.name, (c) =>
      c.query(`UPDATE cluster_leases SET expires_at = now() - interval '1 second' WHERE name = 's1'`),
    );
    expect(await compressing).toMatchObject({
      reason: 'owner_unreachable',
      details: { retryable: true, owner_epoch: a.holder.epoch },
    });
  });

  it('refuses at once beyond its bound of requests in flight', async () => {
    const s = await schema();
    const a = await instance(s, 'a', () => Promise.resolve('late'));
    const b = await instance(s, 'b', () => Promise.resolve(null));
    const bounded = new ControlRelay({
      store: b.store,
      log: silent,
      execute: () => Promise.resolve(null),
      maxInFlight: 1,
      timeoutMs: 30_000,
    });
    bounded.start();
    cleanups.push(() => bounded.stop());
    await b.listener.listening();
    const first = bounded.forward(a.holder, 'session.prompts', 's1', null, { session_id: 's1' });
    await expect(
      bounded.forward(a.holder, 'session.prompts', 's1', null, { session_id: 's1' }),
    ).rejects.toMatchObject({
      reason: 'owner_unreachable',
    });
    await a.start();
    expect(await first).toBe('late');
    expect(a.calls).toHaveLength(1);
  });
});
