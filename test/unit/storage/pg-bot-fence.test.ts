/**
 * The bot fence on a real PostgreSQL (SCL-1, issue 14), each test in a schema of its own: the
 * messaging stores' writes that decide "handled once" — an inbound message taken, a catch-up cursor
 * advanced — commit only for the instance holding the bot's lease under the token it took it with.
 * Expiry is planted by moving expires_at, never by waiting.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { LeaseHolder } from '../../../src/domain/cluster/lease.js';
import { BotLeaseLost } from '../../../src/domain/ports/cluster-store.js';
import { PostgresClusterStore } from '../../../src/storage/postgres/cluster-store.js';
import { PostgresDeliveryLedger } from '../../../src/storage/postgres/delivery-ledger.js';
import { PostgresLocalStore } from '../../../src/storage/postgres/local-store.js';
import { PgNotifications } from '../../../src/storage/postgres/notifications.js';
import { PostgresPlatformCursors } from '../../../src/storage/postgres/platform-cursors.js';
import { PostgresSessionStore } from '../../../src/storage/postgres/session-store.js';
import { createTestSchema, inSchema, type TestSchema } from '../../shared/postgres.js';

const BOT = 'telegram:123456';
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

interface Instance {
  holder: LeaseHolder;
  cluster: PostgresClusterStore;
  ledger: PostgresDeliveryLedger;
  cursors: PostgresPlatformCursors;
  /** The token this instance believes it holds the bot under (what BotLeases.token answers). */
  token: { value: number | null };
}

async function instance(s: TestSchema, id: string): Promise<Instance> {
  const sessions = await PostgresSessionStore.open(s.url);
  const holder = { instance_id: id, epoch: await new PostgresLocalStore(sessions.db).openEpoch(id) };
  const listener = new PgNotifications(s.url);
  const cluster = new PostgresClusterStore(sessions.db, listener, holder);
  await cluster.register(id);
  const ledger = new PostgresDeliveryLedger(sessions.db);
  const cursors = new PostgresPlatformCursors(sessions.db);
  const token = { value: null as number | null };
  const fence = { holder, names: [BOT], token: () => token.value };
  ledger.fenceByBots(fence);
  cursors.fenceByBots(fence);
  cleanups.push(async () => {
    await listener.close();
    await sessions.close();
  });
  return { holder, cluster, ledger, cursors, token };
}

async function take(i: Instance): Promise<void> {
  const result = await i.cluster.take('bot', BOT, 300);
  if (result.kind === 'held') throw new Error('held elsewhere');
  i.token.value = result.token;
}

const ref = (message_id: string) => ({ platform: 'telegram', chat_id: '42', message_id });

describe('the bot fence (PostgreSQL)', () => {
  it('only the holder takes inbound messages and advances cursors; after a takeover the old holder is refused', async () => {
    const s = await createTestSchema();
    cleanups.push(() => s.drop());
    const a = await instance(s, 'a');
    const b = await instance(s, 'b');
    await take(a);
    expect((await b.cluster.take('bot', BOT, 300)).kind).toBe('held');

    await a.ledger.takeInbound(ref('1'), 'telegram:dm:42');
    await a.cursors.saveCursor('discord', 'chan', '100');
    expect(await b.ledger.isInboundTaken(ref('1'))).toBe(true);
    // b holds nothing: its writes are refused before they touch a row.
    await expect(b.ledger.takeInbound(ref('2'), 'telegram:dm:42')).rejects.toBeInstanceOf(BotLeaseLost);
    await expect(b.cursors.saveCursor('discord', 'chan', '200')).rejects.toBeInstanceOf(BotLeaseLost);

    // a stops renewing; its lease expires by the server's clock and b takes the bot (token + 1).
    await inSchema(s.name, (c) =>
      c.query(`UPDATE cluster_leases SET expires_at = now() - interval '1 second' WHERE kind = 'bot'`),
    );
    // Expired but not yet taken: a (which would have stopped at lease_s / 2) is refused already.
    await expect(a.ledger.takeInbound(ref('3'), 'telegram:dm:42')).rejects.toBeInstanceOf(BotLeaseLost);
    await take(b);
    expect(b.token.value).toBe(a.token.value! + 1);
    await expect(a.ledger.takeInbound(ref('3'), 'telegram:dm:42')).rejects.toBeInstanceOf(BotLeaseLost);
    await expect(a.cursors.saveCursor('discord', 'chan', '300')).rejects.toBeInstanceOf(BotLeaseLost);
    await expect(a.ledger.writeCleanShutdown()).rejects.toBeInstanceOf(BotLeaseLost);
    await b.ledger.takeInbound(ref('3'), 'telegram:dm:42');
    await b.cursors.saveCursor('discord', 'chan', '400');
    expect((await b.cursors.readCursors('discord')).get('chan')).toBe('400');

    // Who holds the bot, as `gatehouse status` shows it.
    expect(await a.cluster.botLeases()).toEqual([
      { name: BOT, token: b.token.value, owner_epoch: b.holder.epoch, owner_name: 'b' },
    ]);
    await b.cluster.release('bot', BOT);
    expect(await a.cluster.botLeases()).toEqual([
      { name: BOT, token: b.token.value, owner_epoch: null, owner_name: null },
    ]);
  });

  it('a fence whose instance says it may not write (renewals stalled) is refused while the lease still holds', async () => {
    const s = await createTestSchema();
    cleanups.push(() => s.drop());
    const a = await instance(s, 'a');
    await take(a);
    const held = a.token.value;
    a.token.value = null;
    await expect(a.ledger.takeInbound(ref('1'), 'telegram:dm:42')).rejects.toBeInstanceOf(BotLeaseLost);
    a.token.value = held;
    await a.ledger.takeInbound(ref('1'), 'telegram:dm:42');
    expect(await a.ledger.isInboundTaken(ref('1'))).toBe(true);
  });
});
