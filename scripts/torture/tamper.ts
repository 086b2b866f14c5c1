/**
 * Tampering with creation receipts while the daemon is down (REC-1): the harness writes straight into
 * the state database, as a bad backup restore or a hand edit would, and the next start must pause
 * that session and run nothing of it.
 */
import Database from 'better-sqlite3';
import { localSessionKey, receiptKey } from '../../src/domain/local/receipt.js';
import type { Ledger } from './client.js';
import type { Rng } from './rng.js';

export const TAMPER_KINDS = ['foreign_profile', 'mismatched_route', 'copied', 'corrupt_json'] as const;
export type TamperKind = (typeof TAMPER_KINDS)[number];

/**
 * Raw statements on a state database, with `?` placeholders, whichever backend holds it: tampering
 * is the same SQL on SQLite and PostgreSQL (the e2e tests plant it in both).
 */
export interface RawRows {
  get<T>(sql: string, ...params: unknown[]): Promise<T | undefined>;
  run(sql: string, ...params: unknown[]): Promise<void>;
}

/** RawRows on an open better-sqlite3 handle. */
export function sqliteRows(db: Database.Database): RawRows {
  return {
    get: <T>(sql: string, ...params: unknown[]) =>
      Promise.resolve(db.prepare(sql).get(...params) as T | undefined),
    run: (sql: string, ...params: unknown[]) => {
      db.prepare(sql).run(...params);
      return Promise.resolve();
    },
  };
}

async function receiptBody(db: RawRows, logicalId: string): Promise<string> {
  const row = await db.get<{ body: string }>(
    'SELECT body FROM private_receipts WHERE key = ?',
    receiptKey(logicalId),
  );
  return row!.body;
}

/** Applies one kind of tampering to `victim`'s receipt (or route), using `other` where it needs a second session. */
export async function tamperReceipt(
  db: RawRows,
  kind: TamperKind | 'missing',
  victim: string,
  other: string,
): Promise<void> {
  const key = receiptKey(victim);
  const body = await receiptBody(db, victim);
  const setBody = (text: string) => db.run('UPDATE private_receipts SET body = ? WHERE key = ?', text, key);
  switch (kind) {
    case 'foreign_profile':
      return setBody(JSON.stringify({ ...JSON.parse(body), profile: 'someone-else' }));
    case 'mismatched_route':
      return db.run('UPDATE routes SET session_id = ? WHERE session_key = ?', other, localSessionKey(victim));
    case 'copied':
      return setBody(await receiptBody(db, other));
    case 'corrupt_json':
      return setBody(body.slice(0, body.length / 2));
    case 'missing':
      return db.run('DELETE FROM private_receipts WHERE key = ?', key);
  }
}

/**
 * Picks a session of the ledger (preferring one with queued admissions) and tampers with it.
 * Returns the victim and the admissions it had queued, or null when there is no pair of sessions yet.
 */
export async function tamper(
  file: string,
  ledger: Ledger,
  kind: TamperKind,
  rng: Rng,
): Promise<{ request_id: string; queued: string[] } | null> {
  const candidates = [...ledger.sessions].filter(([r]) => !ledger.tampered.has(r));
  if (candidates.length < 3) return null;
  const db = new Database(file);
  try {
    const queuedBy = (id: string) =>
      (
        db
          .prepare(`SELECT admission_id FROM admissions WHERE logical_id = ? AND state = 'queued'`)
          .all(id) as {
          admission_id: string;
        }[]
      ).map((r) => r.admission_id);
    const withQueue = candidates.filter(([, s]) => queuedBy(s.session_id).length > 0);
    const [requestId, victim] = rng.pick(withQueue.length > 0 ? withQueue : candidates);
    const other = rng.pick(candidates.filter(([r]) => r !== requestId))[1];
    await tamperReceipt(sqliteRows(db), kind, victim.session_id, other.session_id);
    return { request_id: requestId, queued: queuedBy(victim.session_id) };
  } finally {
    db.close();
  }
}

/** Plants a fork: a second child of `logicalId`'s current transcript that its receipt never recorded. */
export async function plantFork(db: RawRows, logicalId: string, forkId: string): Promise<void> {
  const receipt = JSON.parse(await receiptBody(db, logicalId)) as { current_session_id: string };
  await db.run(
    `INSERT INTO sessions (session_id, session_key, created_at, parent_session_id, lineage_kind)
     VALUES (?, ?, ?, ?, 'compression')`,
    forkId,
    localSessionKey(logicalId),
    new Date().toISOString(),
    receipt.current_session_id,
  );
}
