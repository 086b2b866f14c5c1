/**
 * The bot leases' decisions (domain/cluster/bots.ts), pure and as a state machine over an
 * in-memory lease table with the same rules as the PostgreSQL one (one owner, the token grows on
 * every change of owner). Which instance receives for a bot, and when it must stop.
 */
import { describe, expect, it } from 'vitest';
import {
  BotLeases,
  ConfirmationLatch,
  botIdOf,
  botLeaseName,
  decideRound,
  stillHeld,
  type BotLeaseCluster,
  type BotTake,
} from '../../../src/domain/cluster/bots.js';

describe('botIdOf: a non-secret id, never the token', () => {
  it('reads the id each platform puts in its token', () => {
    expect(botIdOf('telegram', '123456:AAE-secret-part')).toBe('123456');
    expect(botIdOf('slack', 'xapp-1-A0123ABCDE-4567-deadbeef')).toBe('A0123ABCDE');
    const discordId = '112233445566778899';
    const discord = `${Buffer.from(discordId).toString('base64').replace(/=+$/, '')}.GhIjK.secret`;
    expect(botIdOf('discord', discord)).toBe(discordId);
    expect(botLeaseName('telegram', '123456')).toBe('telegram:123456');
  });

  it('names a token of another shape by a hash that does not contain it', () => {
    const id = botIdOf('discord', 'not-a-real-token');
    expect(id).toMatch(/^sha256-[0-9a-f]{16}$/);
    expect(id).not.toContain('not-a-real-token');
    expect(botIdOf('discord', 'not-a-real-token')).toBe(id);
    expect(botIdOf('mastodon', 'secret')).not.toContain('secret');
  });
});

describe('decideRound and stillHeld', () => {
  const names = ['slack:A1', 'telegram:1'];
  it('holds only when every bot was taken; otherwise gives back what the round took', () => {
    const all: BotTake[] = [
      { name: 'slack:A1', kind: 'taken', token: 3 },
      { name: 'telegram:1', kind: 'mine', token: 7 },
    ];
    const hold = decideRound(names, all);
    expect(hold.kind).toBe('hold');
    expect(hold.kind === 'hold' && [...hold.tokens]).toEqual([
      ['slack:A1', 3],
      ['telegram:1', 7],
    ]);
    expect(
      decideRound(names, [
        { name: 'slack:A1', kind: 'taken', token: 3 },
        { name: 'telegram:1', kind: 'held' },
      ]),
    ).toEqual({ kind: 'standby', giveBack: ['slack:A1'] });
    expect(decideRound(names, [{ name: 'slack:A1', kind: 'held' }])).toEqual({
      kind: 'standby',
      giveBack: [],
    });
  });

  it('a bot is still held only under the token it was taken with', () => {
    const held = new Map([['telegram:1', 7]]);
    expect(stillHeld(held, [{ name: 'telegram:1', kind: 'mine', token: 7 }])).toBe(true);
    expect(stillHeld(held, [{ name: 'telegram:1', kind: 'held' }])).toBe(false);
    expect(stillHeld(held, [{ name: 'telegram:1', kind: 'taken', token: 8 }])).toBe(false);
    expect(stillHeld(held, [])).toBe(false);
  });
});

describe('ConfirmationLatch: once a fenced answer had no token while receiving, nothing is confirmed again', () => {
  const names = ['slack:A1', 'telegram:1'];
  const rig = () => {
    const tokens = new Map<string, number | null>([
      ['slack:A1', 3],
      ['telegram:1', 7],
    ]);
    const state = { receiving: false };
    const latch = new ConfirmationLatch(
      names,
      (name) => tokens.get(name) ?? null,
      () => state.receiving,
    );
    return { tokens, state, latch };
  };

  it('a standby answering no token does not latch: the instance confirms once it holds the bots', () => {
    const { tokens, state, latch } = rig();
    tokens.set('telegram:1', null);
    expect(latch.token('telegram:1')).toBeNull();
    expect(latch.confirmable()).toBe(false);
    tokens.set('telegram:1', 8);
    state.receiving = true;
    expect(latch.token('telegram:1')).toBe(8);
    expect(latch.confirmable()).toBe(true);
  });

  it('a write refused while receiving latches, even after the renewals recover', () => {
    const { tokens, state, latch } = rig();
    state.receiving = true;
    expect(latch.confirmable()).toBe(true);
    tokens.set('slack:A1', null);
    expect(latch.token('slack:A1')).toBeNull(); // the fenced write is refused
    tokens.set('slack:A1', 3); // renewals recover
    expect(latch.token('slack:A1')).toBe(3);
    expect(latch.confirmable()).toBe(false);
  });

  it('a confirmation check finding a bot without a token latches too', () => {
    const { tokens, state, latch } = rig();
    state.receiving = true;
    tokens.set('telegram:1', null);
    expect(latch.confirmable()).toBe(false);
    tokens.set('telegram:1', 7);
    expect(latch.confirmable()).toBe(false);
  });
});

/** An in-memory lease table: one owner per name, the token grows on every change of owner. */
class Table {
  readonly rows = new Map<string, { owner: string | null; token: number }>();
  private listeners: (() => void)[] = [];

  cluster(owner: string, health: { ok: boolean }): BotLeaseCluster {
    return {
      holder: { instance_id: owner, epoch: owner.charCodeAt(0) },
      take: (name) => Promise.resolve(this.take(owner, name)),
      release: (name) => {
        const row = this.rows.get(name);
        if (row?.owner === owner) row.owner = null;
        return Promise.resolve();
      },
      announce: () => {
        for (const l of this.listeners) l();
        return Promise.resolve();
      },
      onAnnounced: (listener) => {
        this.listeners.push(listener);
        return () => (this.listeners = this.listeners.filter((l) => l !== listener));
      },
      healthy: () => health.ok,
    };
  }

  private take(owner: string, name: string): BotTake {
    const row = this.rows.get(name);
    if (row === undefined) {
      this.rows.set(name, { owner, token: 1 });
      return { name, kind: 'taken', token: 1 };
    }
    if (row.owner === owner) return { name, kind: 'mine', token: row.token };
    if (row.owner !== null) return { name, kind: 'held' };
    row.owner = owner;
    row.token++;
    return { name, kind: 'taken', token: row.token };
  }

  /** Another instance takes `name` over (its owner's lease expired). */
  steal(name: string, owner: string): void {
    const row = this.rows.get(name)!;
    row.owner = owner;
    row.token++;
  }
}

function instance(table: Table, owner: string, names: string[], health = { ok: true }) {
  const log: string[] = [];
  const bots = new BotLeases(
    names,
    table.cluster(owner, health),
    {
      acquired: () => {
        log.push('acquired');
        return Promise.resolve();
      },
      lost: (why) => log.push(`lost: ${why}`),
      warn: () => undefined,
    },
    { scanMs: 60_000 }, // no timer fires in a test: rounds come from start() and announcements
  );
  return { bots, log, health };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

describe('BotLeases', () => {
  const names = ['telegram:1', 'discord:9'];

  it('one instance takes every bot; the others stand by, fenced, until a release hands them over', async () => {
    const table = new Table();
    const a = instance(table, 'a', names);
    const b = instance(table, 'b', names);
    await a.bots.start();
    await b.bots.start();
    expect(a.bots.state).toBe('holding');
    expect(b.bots.state).toBe('standby');
    expect(a.log).toEqual(['acquired']);
    expect(a.bots.token('telegram:1')).toBe(1);
    expect(b.bots.token('telegram:1')).toBeNull();
    // A standby instance holds nothing: no half of the bots is kept aside.
    expect([...table.rows.values()].every((r) => r.owner === 'a')).toBe(true);

    await a.bots.release();
    await settle();
    expect(a.bots.state).toBe('released');
    expect(a.bots.token('telegram:1')).toBeNull();
    expect(b.bots.state).toBe('holding');
    expect(b.log).toEqual(['acquired']);
    expect(b.bots.token('telegram:1')).toBe(2);
    a.bots.stop();
    b.bots.stop();
  });

  it('a round that finds one bot held elsewhere gives back the ones it took', async () => {
    const table = new Table();
    const other = instance(table, 'z', ['telegram:1']);
    await other.bots.start();
    const a = instance(table, 'a', names);
    await a.bots.start();
    expect(a.bots.state).toBe('standby');
    // discord:9 sorts first: taken in the round, given back when telegram:1 was found held.
    expect(table.rows.get('discord:9')).toEqual({ owner: null, token: 1 });
    a.bots.stop();
    other.bots.stop();
  });

  it('writes are refused as soon as the renewals stall, and a lease taken over is lost', async () => {
    const table = new Table();
    const a = instance(table, 'a', names);
    await a.bots.start();
    a.health.ok = false;
    expect(a.bots.token('telegram:1')).toBeNull();
    a.health.ok = true;
    expect(a.bots.token('telegram:1')).toBe(1);

    table.steal('telegram:1', 'b');
    await table.cluster('b', { ok: true }).announce(); // a check round on the holder
    await settle();
    expect(a.bots.state).toBe('lost');
    expect(a.log).toEqual(['acquired', 'lost: a bot lease was taken over by another instance']);
    expect(a.bots.token('discord:9')).toBeNull();
    // A lost instance gives nothing back: it writes nothing any more.
    await a.bots.release();
    expect(table.rows.get('discord:9')!.owner).toBe('a');
    a.bots.stop();
  });

  it('the checks renew the leases while the gateway is still starting', async () => {
    const table = new Table();
    let started!: () => void;
    const takes: string[] = [];
    const cluster = table.cluster('a', { ok: true });
    const bots = new BotLeases(
      names,
      { ...cluster, take: (name) => (takes.push(name), cluster.take(name)) },
      {
        acquired: () => new Promise<void>((resolve) => (started = resolve)),
        lost: () => undefined,
        warn: () => undefined,
      },
      { scanMs: 60_000 },
    );
    let resolved = false;
    const starting = bots.start().then(() => (resolved = true));
    await settle();
    expect(bots.state).toBe('holding');
    expect(resolved).toBe(false); // start() waits for the gateway
    const before = takes.length;
    await table.cluster('b', { ok: true }).announce(); // a check round while the start runs
    await settle();
    expect(takes.length).toBe(before + names.length);
    started();
    await starting;
    expect(resolved).toBe(true);
    bots.stop();
  });

  it('a gateway that cannot start loses the bots', async () => {
    const table = new Table();
    const log: string[] = [];
    const bots = new BotLeases(
      names,
      table.cluster('a', { ok: true }),
      {
        acquired: () => Promise.reject(new Error('no route')),
        lost: (why) => log.push(why),
        warn: () => undefined,
      },
      { scanMs: 60_000 },
    );
    await bots.start();
    expect(bots.state).toBe('lost');
    expect(log).toEqual(['the chat platforms could not start: no route']);
    bots.stop();
  });

  it('the member failing stops the bots at once', async () => {
    const table = new Table();
    const a = instance(table, 'a', names);
    await a.bots.start();
    a.bots.memberFailed('the database connection was lost');
    expect(a.bots.state).toBe('lost');
    expect(a.log.at(-1)).toBe('lost: the database connection was lost');
    a.bots.stop();
  });
});
