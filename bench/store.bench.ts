/**
 * Store benchmarks (issue 2). Every figure is a ratio to a baseline measured in the same run on the
 * same disk: raw better-sqlite3 statements with synchronous=FULL, or the same store at a smaller size.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { SessionSourceFields } from '../src/domain/vocabulary.js';
import { openDatabase } from '../src/storage/sqlite/database.js';
import { SqliteSessionStore } from '../src/storage/sqlite/session-store.js';
import { figure, medianMs, rate, type Bench, type BenchFigure } from './lib.js';

export const source: SessionSourceFields = {
  platform: 'local',
  chat_id: 'bench',
  chat_name: 'bench',
  chat_type: 'dm',
  user_id: 'u',
  user_name: 'u',
  thread_id: null,
  chat_topic: null,
  user_id_alt: null,
  chat_id_alt: null,
  is_bot: false,
  guild_id: null,
  parent_chat_id: null,
  message_id: null,
  role_authorized: false,
};

const WORDS =
  'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu'.split(
    ' ',
  );

function sentence(i: number): string {
  let x = i * 2654435761;
  const out: string[] = [];
  for (let w = 0; w < 10; w++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out.push(WORDS[x % WORDS.length]!);
  }
  return `${out.join(' ')} n${i}`;
}

function tempFile(dir: string, name: string): string {
  return path.join(dir, name);
}

/** Fills a store's database with `count` routes (each with its session row) in one transaction. */
function bulkRoutes(db: Database.Database, count: number): void {
  const session = db.prepare('INSERT INTO sessions (session_id, session_key, created_at) VALUES (?, ?, ?)');
  const route = db.prepare(
    'INSERT INTO routes (session_key, session_id, created_at, updated_at, chat_type) VALUES (?, ?, ?, ?, ?)',
  );
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const at = new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
      const id = `20260101_000000_${i.toString(16).padStart(8, '0')}`;
      session.run(id, `k:${i}`, at);
      route.run(`k:${i}`, id, at, at, 'dm');
    }
  })();
}

/** Fills `count` messages over 100 sessions with raw inserts, then rebuilds the derived index. */
function bulkMessages(db: Database.Database, count: number): void {
  const session = db.prepare('INSERT INTO sessions (session_id, session_key, created_at) VALUES (?, ?, ?)');
  const message = db.prepare(
    'INSERT INTO messages (session_id, role, content, created_at) VALUES (?, ?, ?, ?)',
  );
  db.transaction(() => {
    for (let s = 0; s < 100; s++) session.run(`s${s}`, `k${s}`, '2026-01-01T00:00:00.000Z');
    for (let i = 0; i < count; i++) {
      // A fixed number of messages carry the rare word, whatever the size: the query's answer is the same.
      const text = i % Math.floor(count / 10) === 0 ? `${sentence(i)} zeppelin` : sentence(i);
      message.run(`s${i % 100}`, i % 2 === 0 ? 'user' : 'assistant', text, '2026-01-01T00:00:00.000Z');
    }
  })();
}

const bench: Bench = {
  name: 'store',
  async run({ quick }) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-'));
    const figures: BenchFigure[] = [];
    const ms = quick ? 300 : 1500;
    try {
      // Baseline: one single-row insert per implicit transaction, WAL + synchronous=FULL. fsync
      // speed drifts on a shared disk, so it is measured before and after the store and averaged.
      const raw = new Database(tempFile(dir, 'raw.db'));
      raw.pragma('journal_mode = WAL');
      raw.pragma('synchronous = FULL');
      raw.exec(
        'CREATE TABLE t (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT, created_at TEXT)',
      );
      const rawInsert = raw.prepare(
        'INSERT INTO t (session_id, role, content, created_at) VALUES (?, ?, ?, ?)',
      );
      let n = 0;
      const rawRate = () =>
        rate(() => rawInsert.run('s', 'user', sentence(n++), new Date().toISOString()), ms);
      const rawBefore = await rawRate();

      const store = SqliteSessionStore.open(tempFile(dir, 'store.db'));
      let k = 0;
      const createRate = await rate(() => store.getOrCreateSession(`k:${k++}`, source), ms);
      const touchRate = await rate(() => store.getOrCreateSession(`k:${k++ % 1000}`, source), ms);
      const sid = (await store.getOrCreateSession('append', source)).entry.session_id;
      let m = 0;
      const appendRate = await rate(
        () => store.appendToTranscript(sid, { role: 'user', content: sentence(m++) }),
        ms,
      );
      const rawAfter = await rawRate();
      raw.close();
      const baseline = { name: 'raw FULL-sync insert/s', value: (rawBefore + rawAfter) / 2 };
      figures.push(
        figure({
          bench: 'store',
          name: 'getOrCreateSession (create)',
          value: createRate,
          unit: '/s',
          baseline,
        }),
        figure({
          bench: 'store',
          name: 'getOrCreateSession (existing)',
          value: touchRate,
          unit: '/s',
          baseline,
        }),
        figure({
          bench: 'store',
          name: 'appendToTranscript',
          value: appendRate,
          unit: '/s',
          baseline,
          aim: { op: '>=', ratio: 0.8 },
        }),
      );

      // loadTranscript of a 10,000-message session vs a raw SELECT of the same rows.
      const size = quick ? 2000 : 10_000;
      const big = (await store.getOrCreateSession('big', source)).entry.session_id;
      const batch = Array.from({ length: size }, (_, i) => ({ role: 'user' as const, content: sentence(i) }));
      await store.appendToTranscript(big, batch);
      const select = store.db.prepare(
        `SELECT id, session_id, role, content, extra_json, created_at FROM messages
          WHERE session_id = ? AND removed_at IS NULL ORDER BY id`,
      );
      const rawLoad = await medianMs(() => select.all(big), quick ? 5 : 20);
      const load = await medianMs(() => store.loadTranscript(big), quick ? 5 : 20);
      figures.push(
        figure({
          bench: 'store',
          name: `loadTranscript (${size} messages)`,
          value: load,
          unit: 'ms',
          baseline: { name: 'raw SELECT', value: rawLoad },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 2 },
        }),
      );
      await store.close();

      // listSessions(limit 50): first page and a page deep in the middle, large vs small table.
      const listAt = async (count: number) => {
        const s = SqliteSessionStore.open(tempFile(dir, `list-${count}.db`));
        bulkRoutes(s.db, count);
        const first = await medianMs(() => s.listSessions({ limit: 50 }), 30);
        let cursor: string | null = null;
        for (let p = 0; p < 10; p++) cursor = (await s.listSessions({ limit: 50, cursor })).nextCursor;
        const deep = await medianMs(() => s.listSessions({ limit: 50, cursor }), 30);
        await s.close();
        return { first, deep };
      };
      const small = await listAt(1000);
      const large = await listAt(quick ? 10_000 : 100_000);
      const bigLabel = quick ? '10,000' : '100,000';
      figures.push(
        figure({
          bench: 'store',
          name: `listSessions(50) first page at ${bigLabel}`,
          value: large.first,
          unit: 'ms',
          baseline: { name: 'same at 1,000', value: small.first },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 2 },
        }),
        figure({
          bench: 'store',
          name: `listSessions(50) 11th page at ${bigLabel}`,
          value: large.deep,
          unit: 'ms',
          baseline: { name: 'same at 1,000', value: small.deep },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 2 },
        }),
      );

      // FTS: a query whose answer has the same size at both scales, and a common word (limit 20).
      const ftsAt = async (count: number) => {
        const db = openDatabase(tempFile(dir, `fts-${count}.db`));
        bulkMessages(db, count);
        db.close();
        const s = SqliteSessionStore.open(tempFile(dir, `fts-${count}.db`));
        await s.rebuildSearchIndex();
        const rare = await medianMs(() => s.searchMessages('zeppelin', { limit: 20 }), 30);
        const common = await medianMs(() => s.searchMessages('alpha bravo', { limit: 20 }), 30);
        await s.close();
        return { rare, common };
      };
      const ftsSmall = await ftsAt(10_000);
      const ftsLarge = await ftsAt(quick ? 100_000 : 1_000_000);
      const ftsLabel = quick ? '100,000' : '1,000,000';
      figures.push(
        figure({
          bench: 'store',
          name: `FTS rare term at ${ftsLabel} msgs`,
          value: ftsLarge.rare,
          unit: 'ms',
          baseline: { name: 'same at 10,000', value: ftsSmall.rare },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 5 },
        }),
        figure({
          bench: 'store',
          name: `FTS common terms (limit 20) at ${ftsLabel} msgs`,
          value: ftsLarge.common,
          unit: 'ms',
          baseline: { name: 'same at 10,000', value: ftsSmall.common },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 5 },
        }),
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    return figures;
  },
};

export default bench;
