/**
 * The store backends side by side (issue 14): a chat turn's durable commits — the session touched,
 * the turn started with its input, ended with its answer and reply, the reply marked delivered,
 * each through the group commit — on PostgreSQL against SQLite, same harness, same run. Figures:
 * turns/s with 16 chats at once (the group commit's throughput) and one chat's turn p50 (latency).
 * PostgreSQL runs in a fresh schema of the server on 127.0.0.1:5432 (GATEHOUSE_BENCH_PG_URL names
 * another), dropped afterwards.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SessionSourceFields } from '../src/domain/vocabulary.js';
import type { DeliveryLedger } from '../src/domain/ports/delivery-ledger.js';
import type { SessionStore } from '../src/domain/ports/session-store.js';
import { PostgresDeliveryLedger } from '../src/storage/postgres/delivery-ledger.js';
import { PostgresSessionStore } from '../src/storage/postgres/session-store.js';
import { SqliteDeliveryLedger } from '../src/storage/sqlite/delivery-ledger.js';
import { SqliteSessionStore } from '../src/storage/sqlite/session-store.js';
import { figure, percentile, rate, samples, type Bench, type BenchFigure } from './lib.js';
import { createBenchSchema } from './postgres.js';
import { source } from './store.bench.js';

const NAME = 'store-backends';
const CHATS = 16;

interface Backend {
  store: SessionStore;
  ledger: DeliveryLedger;
  close(): Promise<void>;
}

function origin(chat: string): SessionSourceFields {
  return { ...source, platform: 'telegram', chat_id: chat, chat_name: chat };
}

function openSqlite(): Backend {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gh-bench-backends-'));
  const store = SqliteSessionStore.open(path.join(dir, 'state.db'));
  return {
    store,
    ledger: new SqliteDeliveryLedger(store.db),
    async close() {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function openPostgres(): Promise<Backend> {
  const schema = await createBenchSchema();
  const store = await PostgresSessionStore.open(schema.url);
  return {
    store,
    ledger: new PostgresDeliveryLedger(store.db),
    async close() {
      await store.close();
      await schema.drop();
    },
  };
}

let turns = 0;

/** One chat turn's commits, as the messaging gateway makes them. */
async function turn({ store, ledger }: Backend, chat: string): Promise<void> {
  const key = `agent:main:telegram:dm:${chat}`;
  const { entry } = await store.getOrCreateSession(key, origin(chat));
  const n = turns++;
  await ledger.startTurn(key, null, {
    input: { sessionId: entry.session_id, message: { role: 'user', content: `question ${n}` } },
  });
  const delivery = await ledger.endTurn(
    key,
    {
      sessionId: entry.session_id,
      messages: [{ role: 'assistant', content: `answer ${n}` }],
      usage: { total_tokens: 10 },
      clearResumePending: false,
      endStreak: false,
    },
    {
      turnId: `t${n}`,
      sessionKey: key,
      sessionId: entry.session_id,
      target: { platform: 'telegram', chat_id: chat, thread_id: null, reply_to: null },
      text: `answer ${n}`,
      silent: false,
    },
  );
  await ledger.markDelivered(delivery!.delivery_id);
}

async function measure(backend: Backend, ms: number, n: number) {
  const concurrent = await rate(
    () => Promise.all(Array.from({ length: CHATS }, (_, i) => turn(backend, `c${i}`))),
    ms,
  );
  const single = await samples(() => turn(backend, 'solo'), n);
  return { turnsPerSecond: concurrent * CHATS, p50: percentile(single, 50) };
}

const bench: Bench = {
  name: NAME,
  async run({ quick }) {
    const ms = quick ? 500 : 3000;
    const n = quick ? 30 : 200;
    const sqlite = openSqlite();
    const sq = await measure(sqlite, ms, n).finally(() => sqlite.close());
    const postgres = await openPostgres();
    const pgFigures = await measure(postgres, ms, n).finally(() => postgres.close());
    const figures: BenchFigure[] = [
      figure({
        bench: NAME,
        name: `durable chat turns/s, ${CHATS} chats at once (4 group commits each), PostgreSQL vs SQLite`,
        value: pgFigures.turnsPerSecond,
        unit: 'turns/s',
        baseline: { name: 'SQLite', value: sq.turnsPerSecond },
      }),
      figure({
        bench: NAME,
        name: 'one chat turn p50 (4 durable commits), PostgreSQL vs SQLite',
        value: pgFigures.p50,
        unit: 'ms',
        baseline: { name: 'SQLite', value: sq.p50 },
        higherIsBetter: false,
      }),
    ];
    return figures;
  },
};

export default bench;
