/**
 * The cluster's shared event stream on real PostgreSQL (migration 016, docs/cluster.md "Events
 * across instances"): numbering across connections, NOTIFY to other connections (and not to
 * other schemas), retention by count and bytes, explicit holes, the LISTEN connection's reconnect,
 * and two instances' hubs showing one stream under the same numbers. Each test in its own schema.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterEvents } from '../../../src/domain/local/cluster-events.js';
import type { PublicEvent, Viewer } from '../../../src/domain/local/hub.js';
import { SessionHubs } from '../../../src/domain/local/hubs.js';
import { makePrincipal } from '../../../src/domain/auth/principal.js';
import type { SharedEventStore, StreamNote, StreamSignals } from '../../../src/domain/ports/event-stream.js';
import { PgEventStream } from '../../../src/storage/postgres/event-stream.js';
import { PgNotifications } from '../../../src/storage/postgres/notifications.js';
import { createTestSchema, inSchema, type TestSchema } from '../../shared/postgres.js';

const RETENTION = { maxEvents: 100, maxBytes: 1_000_000 };
let schemas: TestSchema[] = [];
let open: { close(): Promise<void> }[] = [];
let stops: (() => void)[] = [];
let errors: unknown[] = [];

afterEach(async () => {
  for (const stop of stops) stop();
  for (const o of open) await o.close();
  for (const s of schemas) await s.drop();
  schemas = [];
  open = [];
  stops = [];
  errors = [];
});

async function schema(): Promise<TestSchema> {
  const s = await createTestSchema();
  schemas.push(s);
  return s;
}

async function stream(s: TestSchema, retention = RETENTION): Promise<PgEventStream> {
  const store = await PgEventStream.open(s.url, retention);
  open.push(store);
  return store;
}

async function listener(s: TestSchema): Promise<PgNotifications> {
  const n = await PgNotifications.open(s.url, { minBackoffMs: 20, maxBackoffMs: 200 });
  open.push(n);
  return n;
}

/** Waits (polling) until `done` holds; the test's timeout bounds it. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 10));
}

const json = (n: number) => JSON.stringify({ type: 'n', n });

/** Resolves when `predicate` holds for a value pushed into the returned list. */
function collector<T>(): {
  items: T[];
  push(item: T): void;
  when(p: (items: T[]) => boolean): Promise<void>;
} {
  const items: T[] = [];
  const waiters: { p: (items: T[]) => boolean; resolve: () => void }[] = [];
  return {
    items,
    push(item) {
      items.push(item);
      for (const w of [...waiters]) {
        if (w.p(items)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }
    },
    when(p) {
      if (p(items)) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ p, resolve }));
    },
  };
}

describe('the shared event stream on PostgreSQL', () => {
  it('numbers one session from two connections without gaps or repeats; the epoch is the first opener’s', async () => {
    const s = await schema();
    const [a, b] = [await stream(s), await stream(s)];
    expect(await a.open('s1', 7)).toEqual({ epoch: 7, last_seq: 0, oldest_seq: null });
    expect((await b.open('s1', 9)).epoch).toBe(7);
    const appends = [];
    for (let i = 0; i < 20; i++) {
      const store = i % 2 === 0 ? a : b;
      appends.push(store.append([{ logical_id: 's1', events: [json(i), json(i + 100)], skipped: 0 }], 9));
    }
    const runs = (await Promise.all(appends)).flat();
    expect(runs.map((r) => r.first_seq).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 20 }, (_, i) => 1 + 2 * i),
    );
    expect(new Set(runs.map((r) => r.epoch))).toEqual(new Set([7]));
    const { head, events } = await a.read('s1', 0, 1000);
    expect(head).toEqual({ epoch: 7, last_seq: 40, oldest_seq: 1 });
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    // Each run's two events are adjacent and in order.
    for (const run of runs) {
      const [first, second] = [events[run.first_seq - 1]!, events[run.first_seq]!];
      const n = (text: string) => (JSON.parse(text) as { n: number }).n;
      expect(n(second.event) - n(first.event)).toBe(100);
    }
    // A session appended to first begins with the appender's epoch.
    const [fresh] = await b.append([{ logical_id: 's2', events: [json(1)], skipped: 0 }], 11);
    expect(fresh).toEqual({ logical_id: 's2', epoch: 11, first_seq: 1 });
  });

  it('a commit notifies other connections of the schema with (logical_id, epoch, seq), not other schemas', async () => {
    const [s, other] = [await schema(), await schema()];
    const [store, otherStore] = [await stream(s), await stream(other)];
    expect(store.channel).not.toBe(otherStore.channel);
    const notes = collector<StreamNote>();
    const elsewhere: string[] = [];
    const n = await listener(s);
    stops.push(n.subscribe(store.channel, (p) => notes.push(JSON.parse(p) as StreamNote)));
    const m = await listener(other);
    stops.push(m.subscribe(otherStore.channel, (p) => elsewhere.push(p)));
    // Both LISTENs are in force before anything is appended (an earlier note is not delivered).
    await n.listening();
    await m.listening();
    await store.append(
      [
        { logical_id: 'x', events: [json(1), json(2), json(3)], skipped: 0 },
        { logical_id: 'y', events: [json(1)], skipped: 0 },
      ],
      5,
    );
    await notes.when((items) => items.length === 2);
    expect(notes.items.sort((p, q) => p.logical_id.localeCompare(q.logical_id))).toEqual([
      { logical_id: 'x', epoch: 5, seq: 3 },
      { logical_id: 'y', epoch: 5, seq: 1 },
    ]);
    // The other schema's listener saw nothing (an append there is seen, so it does listen).
    await otherStore.append([{ logical_id: 'z', events: [json(1)], skipped: 0 }], 1);
    await until(() => elsewhere.length > 0);
    expect(elsewhere.map((p) => (JSON.parse(p) as StreamNote).logical_id)).toEqual(['z']);
  });

  it('keeps at most maxEvents per session at append and maxBytes per session when pruned', async () => {
    const s = await schema();
    const store = await stream(s, { maxEvents: 5, maxBytes: 40 });
    await store.append([{ logical_id: 'a', events: [1, 2, 3, 4, 5, 6, 7, 8].map(json), skipped: 0 }], 1);
    let read = await store.read('a', 0, 100);
    expect(read.head).toEqual({ epoch: 1, last_seq: 8, oldest_seq: 4 });
    expect(read.events.map((e) => e.seq)).toEqual([4, 5, 6, 7, 8]);
    // Each event is 18 bytes of JSON: 40 bytes keep the newest two.
    expect(json(1).length).toBe(18);
    expect(await store.prune()).toBe(3);
    read = await store.read('a', 0, 100);
    expect(read.events.map((e) => e.seq)).toEqual([7, 8]);
    expect(read.head?.oldest_seq).toBe(7);
    const rows = await inSchema(s.name, (c) => c.query('SELECT count(*)::int AS n FROM session_events'));
    expect(rows.rows).toEqual([{ n: 2 }]);
  });

  it('numbers skipped by a publisher have no rows: a hole readers see', async () => {
    const s = await schema();
    const store = await stream(s);
    await store.append([{ logical_id: 'h', events: [json(1)], skipped: 0 }], 1);
    const [run] = await store.append([{ logical_id: 'h', events: [json(2)], skipped: 3 }], 1);
    expect(run!.first_seq).toBe(5);
    const read = await store.read('h', 0, 100);
    expect(read.events.map((e) => e.seq)).toEqual([1, 5]);
  });

  it('the LISTEN connection comes back after its backend is terminated and says so', async () => {
    const s = await schema();
    const store = await stream(s);
    const n = await listener(s);
    const notes = collector<string>();
    stops.push(n.subscribe(store.channel, (p) => notes.push(p)));
    const reconnected = new Promise<void>((resolve) => stops.push(n.onReconnect(resolve)));
    // The connection to terminate is the one whose last statement was this LISTEN.
    await n.listening();
    await inSchema(s.name, (c) =>
      c.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE application_name = 'gatehouse-listen' AND query = $1`,
        [`LISTEN "${store.channel}"`],
      ),
    );
    await reconnected;
    expect(n.connections).toBe(2);
    await store.append([{ logical_id: 'r', events: [json(1)], skipped: 0 }], 1);
    await notes.when((items) => items.length === 1);
  });
});

/** A viewer that records what it is sent. */
function recorder(id: string): Viewer & { seen: { seq: number; epoch: number; n: unknown }[] } {
  const seen: { seq: number; epoch: number; n: unknown }[] = [];
  return {
    id,
    principal: makePrincipal('native:owner', 'native', 'default', []),
    seen,
    notify(_method, params) {
      const p = params as { seq: number; epoch: number; event: PublicEvent };
      seen.push({ seq: p.seq, epoch: p.epoch, n: p.event.n });
      return true;
    },
    deliver(note) {
      return this.notify(note.method, note.params);
    },
  };
}

describe('two instances follow one stream (ClusterEvents on PostgreSQL)', () => {
  async function instance(
    s: TestSchema,
    epoch: number,
    retention = RETENTION,
    wrap: (store: SharedEventStore) => SharedEventStore = (store) => store,
  ) {
    const real = await stream(s, retention);
    const store = wrap(real);
    const n = await listener(s);
    const signals: StreamSignals = {
      subscribe: (handler) => n.subscribe(real.channel, (p) => handler(JSON.parse(p) as StreamNote)),
      onReconnect: (handler) => n.onReconnect(handler),
    };
    let cluster: ClusterEvents | null = null;
    const hubs = new SessionHubs(epoch, {
      replayCapacity: retention.maxEvents,
      coalesceMs: 0,
      outbox: (id, event) => cluster!.enqueue(id, event),
    });
    cluster = new ClusterEvents({
      store,
      signals,
      epoch,
      hubs,
      maxEvents: retention.maxEvents,
      retryMs: 10,
      onError: (error) => errors.push(error),
    });
    stops.push(() => cluster.stop());
    // The stream's notes reach this instance from now on (ClusterEvents subscribed as it was made).
    await n.listening();
    return { hubs, cluster };
  }

  it('a viewer on B sees A’s events in order under A’s numbers; since works on both; a pruned cursor is snapshot_required', async () => {
    const s = await schema();
    const a = await instance(s, 3, { maxEvents: 10, maxBytes: 1_000_000 });
    const b = await instance(s, 4, { maxEvents: 10, maxBytes: 1_000_000 });
    const onA = recorder('va');
    const onB = recorder('vb');
    (await a.cluster.follow('sess')).attach(onA);
    const hubB = await b.cluster.follow('sess');
    hubB.attach(onB);
    expect(hubB.epoch).toBe(3);
    for (let i = 1; i <= 8; i++) a.hubs.of('sess').publish({ type: 'n', n: i });
    // B publishes too (an admission it took): one stream, one numbering.
    b.hubs.of('sess').publish({ type: 'n', n: 100 });
    await a.cluster.flush();
    await b.cluster.flush();
    await until(() => onA.seen.length === 9 && onB.seen.length === 9);
    expect(onB.seen).toEqual(onA.seen);
    expect(onA.seen.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(new Set(onA.seen.map((e) => e.epoch))).toEqual(new Set([3]));
    expect(onA.seen.filter((e) => e.n !== 100).map((e) => e.n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);

    const sinceB = await b.cluster.since('sess', 3, 6);
    expect(sinceB).toMatchObject({ kind: 'events', last_seq: 9 });
    expect(sinceB.kind === 'events' && sinceB.events.map((e) => e.seq)).toEqual([7, 8, 9]);
    expect(await a.cluster.since('sess', 3, 9)).toEqual({ kind: 'events', events: [], last_seq: 9 });
    expect(await a.cluster.since('sess', 4, 0)).toMatchObject({ kind: 'snapshot_required', reason: 'epoch' });
    expect(await a.cluster.since('sess', 3, 12)).toMatchObject({ kind: 'snapshot_required', reason: 'gap' });

    // Past the retention of 10, a cursor at 0 is a gap, never a silent skip to the oldest kept.
    for (let i = 9; i <= 14; i++) a.hubs.of('sess').publish({ type: 'n', n: i });
    await a.cluster.flush();
    expect(await b.cluster.since('sess', 3, 0)).toMatchObject({
      kind: 'snapshot_required',
      reason: 'gap',
      oldest_seq: 6,
    });
  });

  it('a hub that missed rows now pruned numbers on past the hole: its viewers see the jump', async () => {
    const s = await schema();
    const a = await instance(s, 1, { maxEvents: 3, maxBytes: 1_000_000 });
    const b = await instance(s, 2, { maxEvents: 3, maxBytes: 1_000_000 });
    const hubB = await b.cluster.follow('g');
    const onB = recorder('vb');
    hubB.attach(onB);
    // B stops following (released while idle) and A publishes past B's retention.
    b.cluster.released(['g']);
    for (let i = 1; i <= 6; i++) a.hubs.of('g').publish({ type: 'n', n: i });
    await a.cluster.flush();
    expect(onB.seen).toEqual([]);
    await b.cluster.follow('g');
    expect(hubB.receivedSeq).toBe(6);
    a.hubs.of('g').publish({ type: 'n', n: 7 });
    await a.cluster.flush();
    await until(() => onB.seen.length > 0);
    // B opened the stream first: its epoch numbers the stream.
    expect(onB.seen).toEqual([{ seq: 7, epoch: 2, n: 7 }]);
    expect(await b.cluster.since('g', 2, 0)).toMatchObject({ kind: 'snapshot_required', reason: 'gap' });
  });

  it('while appends fail the outbox keeps the newest events; the dropped ones are numbered as a gap', async () => {
    const s = await schema();
    let failing = true;
    const a = await instance(s, 1, { maxEvents: 3, maxBytes: 1_000_000 }, (store) => ({
      open: (id, epoch) => store.open(id, epoch),
      read: (id, after, limit) => store.read(id, after, limit),
      prune: () => store.prune(),
      append: (runs, epoch) =>
        failing ? Promise.reject(new Error('store unavailable (injected)')) : store.append(runs, epoch),
    }));
    const b = await instance(s, 2, { maxEvents: 3, maxBytes: 1_000_000 });
    const onB = recorder('vb');
    (await b.cluster.follow('f')).attach(onB);
    for (let i = 1; i <= 5; i++) a.hubs.of('f').publish({ type: 'n', n: i });
    await until(() => errors.length > 0);
    expect(a.cluster.pendingEvents).toBe(3);
    failing = false;
    await a.cluster.flush();
    expect(a.cluster.pendingEvents).toBe(0);
    await until(() => onB.seen.length === 3);
    // Numbers 1 and 2 went to the events that were dropped: B's viewer sees the jump, and a cursor
    // before them is snapshot_required.
    expect(onB.seen).toEqual([
      { seq: 3, epoch: 2, n: 3 },
      { seq: 4, epoch: 2, n: 4 },
      { seq: 5, epoch: 2, n: 5 },
    ]);
    expect(await b.cluster.since('f', 2, 0)).toMatchObject({ kind: 'snapshot_required', reason: 'gap' });
    expect(await b.cluster.since('f', 2, 2)).toMatchObject({ kind: 'events', last_seq: 5 });
    expect(errors).toHaveLength(1);
  });
});
