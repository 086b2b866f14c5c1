import { afterEach, describe, expect, it } from 'vitest';
import { Semaphore } from '../../../src/domain/concurrency/semaphore.js';
import {
  TurnScheduler,
  type SchedulerEvents,
  type TurnJob,
  type TurnJobResult,
} from '../../../src/domain/local/scheduler.js';
import type { LocalSessionStore } from '../../../src/domain/ports/local-store.js';
import type { SqliteLocalStore } from '../../../src/storage/sqlite/local-store.js';
import type { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { openLocalStore, testAdmission as admission } from '../../shared/local-fixtures.js';

let sessions: SqliteSessionStore | undefined;
afterEach(async () => sessions?.close());

async function openStore(ids: string[]): Promise<{ store: SqliteLocalStore; epoch: number }> {
  const rig = await openLocalStore(ids);
  sessions = rig.sessions;
  return rig;
}

type Event = { name: string; payload: Record<string, unknown> };

function scheduler(
  store: LocalSessionStore,
  epoch: number,
  run: (job: TurnJob) => Promise<TurnJobResult>,
  permits = 8,
): {
  scheduler: TurnScheduler;
  events: Event[];
  errors: unknown[];
  until: (name: keyof SchedulerEvents, n: number) => Promise<void>;
} {
  const events: Event[] = [];
  const errors: unknown[] = [];
  const waiters: (() => void)[] = [];
  const s = new TurnScheduler(
    store,
    epoch,
    new Semaphore(permits),
    run,
    {
      emit<K extends keyof SchedulerEvents & string>(name: K, payload: SchedulerEvents[K]) {
        events.push({ name, payload: payload as Record<string, unknown> });
        for (const w of waiters.splice(0)) w();
      },
    },
    (error) => errors.push(error),
  );
  const until = async (name: keyof SchedulerEvents, n: number) => {
    while (events.filter((e) => e.name === name).length < n)
      await new Promise<void>((resolve) => waiters.push(resolve));
  };
  return { scheduler: s, events, errors, until };
}

const complete = (): Promise<TurnJobResult> => Promise.resolve({ outcome: 'completed', detail: null });

describe('TurnScheduler (LOC-8) on the real SQLite store', () => {
  it('runs each session FIFO, one turn at a time, and sessions side by side', async () => {
    const { store, epoch } = await openStore(['A', 'B']);
    let running = 0;
    let most = 0;
    const order: string[] = [];
    // Each turn holds until one of each session runs at once (a fixed sleep let a loaded machine
    // finish A's turn before B's was claimed), or 10 s, after which `most` says they never did.
    let bothRunning = (): void => undefined;
    const overlap = new Promise<void>((resolve) => (bothRunning = resolve));
    const { scheduler: s, until } = scheduler(store, epoch, async (job) => {
      running++;
      most = Math.max(most, running);
      if (running === 2) bothRunning();
      order.push(job.admission.admission_id);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([overlap, new Promise((r) => (timer = setTimeout(r, 10_000)))]);
      clearTimeout(timer);
      running--;
      return complete();
    });
    await Promise.all(['a1', 'a2', 'a3'].map((id) => store.admit(admission('A', id))));
    await Promise.all(['b1', 'b2'].map((id) => store.admit(admission('B', id))));
    s.kick('A');
    s.kick('B');
    await until('queue:idle', 2);
    expect(order.filter((id) => id.startsWith('a'))).toEqual(['a1', 'a2', 'a3']);
    expect(order.filter((id) => id.startsWith('b'))).toEqual(['b1', 'b2']);
    expect(most).toBe(2); // one per session, both sessions at once
    for (const id of ['a1', 'a2', 'a3', 'b1', 'b2'])
      expect((await store.getAdmission(id))?.state).toBe('completed');
  });

  it('does not lose a kick that arrives while the pump is claiming', async () => {
    const { store, epoch } = await openStore(['A']);
    let first = true;
    // The admission lands in the same group commit as the claim, just after it: the claim finds the
    // queue empty, and the kick for the admission arrives while the pump is still waiting on it.
    const racing: LocalSessionStore = Object.assign(Object.create(store) as SqliteLocalStore, {
      claimNext(logicalId: string, e: number) {
        const claim = store.claimNext(logicalId, e);
        if (first) {
          first = false;
          void store.admit(admission('A', 'late'));
          s.kick('A');
        }
        return claim;
      },
    });
    const { scheduler: s, until, events } = scheduler(racing, epoch, complete);
    s.kick('A');
    await until('queue:idle', 1);
    expect((await store.getAdmission('late'))?.state).toBe('completed');
    expect(events.map((e) => e.name)).toEqual(['turn:claimed', 'turn:settled', 'queue:idle']);
  });

  it('settles a turn once, with what the job settled; a job that throws is settled as failed', async () => {
    const { store, epoch } = await openStore(['A']);
    const {
      scheduler: s,
      until,
      events,
      errors,
    } = scheduler(store, epoch, async (job) => {
      if (job.admission.admission_id === 'boom') throw new Error('runner bug');
      const accepted = await job.settle({ outcome: 'interrupted', detail: 'by test' });
      expect(accepted).toBe(true);
      await expect(job.settle({ outcome: 'completed', detail: null })).rejects.toThrow(/settled twice/);
      return complete(); // ignored: the job already settled
    });
    await store.admit(admission('A', 'self'));
    await store.admit(admission('A', 'boom'));
    s.kick('A');
    await until('queue:idle', 1);
    expect(errors).toEqual([new Error('runner bug')]);
    expect(await store.getAdmission('self')).toMatchObject({ state: 'interrupted', detail: 'by test' });
    expect(await store.getAdmission('boom')).toMatchObject({ state: 'failed' });
    expect(events.filter((e) => e.name === 'turn:settled').map((e) => e.payload)).toMatchObject([
      { admission_id: 'self', outcome: 'interrupted', accepted: true },
      { admission_id: 'boom', outcome: 'failed', accepted: true },
    ]);
  });
});

describe('TurnScheduler.control: the turn slot of reset, undo and retry (LIN-2)', () => {
  it('is busy while a turn runs or is being claimed, runs between turns, then goes on with the queue', async () => {
    const { store, epoch } = await openStore(['A']);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const { scheduler: s, until } = scheduler(store, epoch, async () => {
      await held;
      return complete();
    });
    expect(await s.control('A', () => Promise.resolve('idle'))).toEqual({ kind: 'done', value: 'idle' });
    await until('queue:idle', 1); // the kick the control ends with found nothing queued
    await store.admit(admission('A', 'a1'));
    s.kick('A');
    await Promise.resolve();
    expect(await s.control('A', () => Promise.resolve('claiming'))).toEqual({ kind: 'busy' });
    await until('turn:claimed', 1);
    expect(await s.control('A', () => Promise.resolve('running'))).toEqual({ kind: 'busy' });
    release();
    await until('queue:idle', 2);
    await store.admit(admission('A', 'a2'));
    // Between turns the control runs, and the kick it ends with starts what is queued.
    expect(await s.control('A', () => Promise.resolve('between'))).toEqual({
      kind: 'done',
      value: 'between',
    });
    await until('queue:idle', 3);
    expect((await store.getAdmission('a2'))?.state).toBe('completed');
  });

  it('waits for a turn whose settlement is committed while its runner ends, then runs', async () => {
    const { store, epoch } = await openStore(['A']);
    let release!: () => void;
    const ending = new Promise<void>((resolve) => (release = resolve));
    let settledOnce!: () => void;
    const settledNow = new Promise<void>((resolve) => (settledOnce = resolve));
    const { scheduler: s, until } = scheduler(store, epoch, async (job) => {
      // The runner settles, then still has its own ending to do (publishing, releasing its agent).
      expect(await job.settle({ outcome: 'completed', detail: null })).toBe(true);
      settledOnce();
      await ending;
      return complete();
    });
    await store.admit(admission('A', 'a1'));
    s.kick('A');
    await settledNow;
    // What a viewer sees: the admission settled. Its control must not be refused as busy.
    expect((await store.getAdmission('a1'))?.state).toBe('completed');
    let ran = false;
    const control = s.control('A', () => {
      ran = true;
      return Promise.resolve('reset');
    });
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(ran).toBe(false); // it waits for the runner to end
    release();
    expect(await control).toEqual({ kind: 'done', value: 'reset' });
    await until('queue:idle', 1);
  });

  it('waits for a claim on its way: runs when it finds the queue empty, busy when it starts a turn', async () => {
    const { store, epoch } = await openStore(['A']);
    // Claims wait for the test, as a claim over the network (PostgreSQL) is still out when a viewer
    // that saw the last turn settle sends its control.
    let open!: () => void;
    let gate = Promise.resolve();
    let claims = 0;
    const claimOut = async (n: number) => {
      while (claims < n) await new Promise<void>((resolve) => setImmediate(resolve));
    };
    const slowClaims = new Proxy(store, {
      get(target, name, receiver) {
        if (name !== 'claimNext') return Reflect.get(target, name, receiver) as unknown;
        return async (...args: Parameters<typeof store.claimNext>) => {
          claims++;
          await gate;
          return target.claimNext(...args);
        };
      },
    });
    const { scheduler: s, until } = scheduler(slowClaims, epoch, complete);
    gate = new Promise<void>((resolve) => (open = resolve));
    s.kick('A'); // the claim after a turn: nothing is queued
    await claimOut(1);
    const control = s.control('A', () => Promise.resolve('undo'));
    open();
    expect(await control).toEqual({ kind: 'done', value: 'undo' });
    await until('queue:idle', 1);

    gate = new Promise<void>((resolve) => (open = resolve));
    await store.admit(admission('A', 'a1'));
    s.kick('A'); // this claim starts a1: the control is busy and runs nothing
    await claimOut(3); // the first control's own kick claimed once more
    let ran = false;
    const busy = s.control('A', () => Promise.resolve((ran = true)));
    open();
    expect(await busy).toEqual({ kind: 'busy' });
    expect(ran).toBe(false);
    await until('queue:idle', 2);
    expect((await store.getAdmission('a1'))?.state).toBe('completed');
  });

  it('holds the slot while its transaction is on its way: no claim, no second control, then the queue', async () => {
    const { store, epoch } = await openStore(['A']);
    const { scheduler: s, until, events } = scheduler(store, epoch, complete);
    let commit!: () => void;
    const committing = new Promise<void>((resolve) => (commit = resolve));
    const control = s.control('A', async () => {
      await committing;
      return 'reset';
    });
    await store.admit(admission('A', 'a1'));
    s.kick('A');
    for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    expect(events).toEqual([]);
    expect(await s.control('A', () => Promise.resolve('second'))).toEqual({ kind: 'busy' });
    commit();
    expect(await control).toEqual({ kind: 'done', value: 'reset' });
    await until('queue:idle', 1);
    expect((await store.getAdmission('a1'))?.state).toBe('completed');
  });
});

describe('TurnScheduler in a cluster (SCL-1): a control where the lease is free', () => {
  it('takes the lease with the slot already held, so the pump the take kicks waits behind it', async () => {
    const { store, epoch } = await openStore(['A']);
    // The store's claims wait until the test lets them go: a pump kicked now stays "claiming".
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const slowClaims = new Proxy(store, {
      get(target, name, receiver) {
        if (name !== 'claimNext') return Reflect.get(target, name, receiver) as unknown;
        return async (...args: Parameters<typeof store.claimNext>) => {
          await gate;
          return target.claimNext(...args);
        };
      },
    });
    let owned = false;
    let takes = 0;
    const s: TurnScheduler = new TurnScheduler(
      slowClaims,
      epoch,
      new Semaphore(8),
      () => complete(),
      { emit: () => undefined },
      () => undefined,
      {
        ownership: {
          owns: () => owned,
          elsewhere: () => undefined,
          // As a cluster member does: taking the lease recovers the session, which kicks its pump,
          // and the take's own awaits let that pump reach its claim before the control goes on.
          acquire: async () => {
            takes++;
            owned = true;
            s.kick('A');
            for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
            return true;
          },
          sideEffectsAllowed: () => true,
        },
      },
    );
    // Without the slot held first, the kicked pump (claiming) made every such control busy, and
    // the lease went back when that pump found the queue empty: a reset on a free session never ran.
    const control = await s.control('A', () => Promise.resolve('reset'));
    open();
    expect(control).toEqual({ kind: 'done', value: 'reset' });
    expect(takes).toBe(1);
  });

  it('is refused as elsewhere, and kicks nothing, where another instance holds the lease', async () => {
    const { store, epoch } = await openStore(['A']);
    const kicked: string[] = [];
    const s = new TurnScheduler(
      store,
      epoch,
      new Semaphore(8),
      () => complete(),
      { emit: () => undefined },
      () => undefined,
      {
        ownership: {
          owns: () => false,
          elsewhere: (id) => void kicked.push(id),
          acquire: () => Promise.resolve(false),
          sideEffectsAllowed: () => true,
        },
      },
    );
    expect(await s.control('A', () => Promise.resolve('reset'))).toEqual({ kind: 'elsewhere' });
    await expect(s.exclusive('A', () => Promise.resolve('compress'))).rejects.toMatchObject({
      reason: 'session_busy',
      details: { held_elsewhere: true },
    });
    expect(kicked).toEqual([]);
  });
});

describe("TurnScheduler.exclusive in a cluster (SCL-1): taking the lease resumes a dead owner's turn", () => {
  it('runs that resumed turn first, then the work: neither waits for the other for ever', async () => {
    const { store, epoch: deadEpoch } = await openStore(['A']);
    // A turn the dead owner claimed under its epoch and never settled.
    await store.admit(admission('A', 'a1'));
    expect(await store.claimNext('A', deadEpoch)).toMatchObject({ kind: 'claimed' });
    const epoch = await store.openEpoch('test');
    const order: string[] = [];
    let owned = false;
    const s: TurnScheduler = new TurnScheduler(
      store,
      epoch,
      new Semaphore(8),
      (job) => {
        order.push(`turn ${job.admission.admission_id}${job.resumed ? ' (resumed)' : ''}`);
        return complete();
      },
      { emit: () => undefined },
      () => undefined,
      {
        ownership: {
          owns: () => owned,
          elsewhere: () => undefined,
          // As a cluster member does: taking the lease recovers the session (recoverTaken), which
          // hands the dead owner's running turn to this scheduler.
          acquire: async () => {
            owned = true;
            const claimed = await store.resumeOrphan('a1', epoch);
            s.resume(claimed!);
            return true;
          },
          sideEffectsAllowed: () => true,
        },
      },
    );
    // Before: the resumed pump waited for the slot the compress held, and the compress for the
    // resumed turn to run.
    const compressing = s.exclusive('A', () => {
      order.push('work');
      return Promise.resolve('compressed');
    });
    const outcome = await Promise.race([
      compressing,
      new Promise<string>((resolve) => setTimeout(() => resolve('deadlocked'), 3_000)),
    ]);
    expect(outcome).toBe('compressed');
    expect(order).toEqual(['turn a1 (resumed)', 'work']);
    expect((await store.getAdmission('a1'))?.state).toBe('completed');
  });
});

describe('TurnScheduler.exclusive (session.compress, checkpoint.restore)', () => {
  it('holds the slot while it waits for the running turn: the pump never goes idle (so the lease stays) before the work', async () => {
    const { store, epoch } = await openStore(['A']);
    let finishTurn!: () => void;
    const turnEnds = new Promise<void>((resolve) => (finishTurn = resolve));
    const {
      scheduler: s,
      events,
      until,
    } = scheduler(store, epoch, async () => {
      await turnEnds;
      return complete();
    });
    await store.admit(admission('A', 'a1'));
    s.kick('A');
    await until('turn:claimed', 1);
    // What the work saw: the events so far. A cluster member releases the session's lease on
    // queue:idle, so an idle before the work means the work wrote without the lease.
    let seen: string[] = [];
    const compressing = s.exclusive('A', () => {
      seen = events.map((e) => e.name);
      return Promise.resolve('compressed');
    });
    expect(s.busy('A')).toBe(true);
    finishTurn();
    expect(await compressing).toBe('compressed');
    expect(seen).toEqual(['turn:claimed', 'turn:settled']);
    // Admissions that arrived meanwhile run after it, in order.
    await store.admit(admission('A', 'a2'));
    s.kick('A');
    await until('turn:claimed', 2);
    await until('queue:idle', 1);
    expect((await store.getAdmission('a2'))?.state).toBe('completed');
  });

  it('an admission kicked while the work runs waits for it, then runs', async () => {
    const { store, epoch } = await openStore(['A']);
    const { scheduler: s, events, until } = scheduler(store, epoch, complete);
    let finishWork!: () => void;
    const working = new Promise<void>((resolve) => (finishWork = resolve));
    let started!: () => void;
    const inWork = new Promise<void>((resolve) => (started = resolve));
    const compressing = s.exclusive('A', async () => {
      started();
      await working;
      return 'compressed';
    });
    await inWork;
    await store.admit(admission('A', 'a1'));
    s.kick('A');
    for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    expect(events).toEqual([]);
    expect(await s.control('A', () => Promise.resolve('reset'))).toEqual({ kind: 'busy' });
    finishWork();
    expect(await compressing).toBe('compressed');
    await until('queue:idle', 1);
    expect((await store.getAdmission('a1'))?.state).toBe('completed');
  });
});

describe('TurnScheduler in a cluster (SCL-1): a lease that goes', () => {
  it('leaves the stopped turn running in the store for the instance that takes over, never settled here', async () => {
    const { store, epoch } = await openStore(['A']);
    const {
      scheduler: s,
      events,
      until,
    } = scheduler(
      store,
      epoch,
      (job) =>
        new Promise<TurnJobResult>((resolve) =>
          job.signal.addEventListener('abort', () => resolve({ outcome: 'interrupted', detail: 'stopped' })),
        ),
    );
    // The rig's scheduler has no ownership hook; the lease path is the abort reason alone.
    await store.admit(admission('A', 'a1'));
    s.kick('A');
    await until('turn:claimed', 1);
    expect(s.interruptForLease('A')).toBe(true);
    await until('turn:settled', 1);
    const settled = events.find((e) => e.name === 'turn:settled')!.payload;
    expect(settled).toMatchObject({ accepted: false, detail: 'lease_lost' });
    // Still running: the next owner's recovery resumes it or marks it unknown, as after a kill.
    expect((await store.getAdmission('a1'))?.state).toBe('running');
  });
});
