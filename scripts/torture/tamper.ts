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

/** Applies one kind of tampering to `victim`'s receipt (or route), using `other` where it needs a second session. */
export function tamperReceipt(
  db: Database.Database,
  kind: TamperKind | 'missing',
  victim: string,
  other: string,
): void {
  const key = receiptKey(victim);
  const body = (db.prepare('SELECT body FROM private_receipts WHERE key = ?').get(key) as { body: string })
    .body;
  switch (kind) {
    case 'foreign_profile':
      db.prepare('UPDATE private_receipts SET body = ? WHERE key = ?').run(
        JSON.stringify({ ...JSON.parse(body), profile: 'someone-else' }),
        key,
      );
      return;
    case 'mismatched_route':
      db.prepare('UPDATE routes SET session_id = ? WHERE session_key = ?').run(
        other,
        localSessionKey(victim),
      );
      return;
    case 'copied': {
      const copied = db.prepare('SELECT body FROM private_receipts WHERE key = ?').get(receiptKey(other)) as {
        body: string;
      };
      db.prepare('UPDATE private_receipts SET body = ? WHERE key = ?').run(copied.body, key);
      return;
    }
    case 'corrupt_json':
      db.prepare('UPDATE private_receipts SET body = ? WHERE key = ?').run(
        body.slice(0, body.length / 2),
        key,
      );
      return;
    case 'missing':
      db.prepare('DELETE FROM private_receipts WHERE key = ?').run(key);
      return;
  }
}

/**
 * Picks a session of the ledger (preferring one with queued admissions) and tampers with it.
 * Returns the victim and the admissions it had queued, or null when there is no pair of sessions yet.
 */
export function tamper(
  file: string,
  ledger: Ledger,
  kind: TamperKind,
  rng: Rng,
): { request_id: string; queued: string[] } | null {
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
    tamperReceipt(db, kind, victim.session_id, other.session_id);
    return { request_id: requestId, queued: queuedBy(victim.session_id) };
  } finally {
    db.close();
  }
}

/** Plants a fork: a second child of `logicalId`'s current transcript that its receipt never recorded. */
export function plantFork(db: Database.Database, logicalId: string, forkId: string): void {
  const receipt = JSON.parse(
    (
      db.prepare('SELECT body FROM private_receipts WHERE key = ?').get(receiptKey(logicalId)) as {
        body: string;
      }
    ).body,
  ) as { current_session_id: string };
  db.prepare(
    `INSERT INTO sessions (session_id, session_key, created_at, parent_session_id, lineage_kind)
     VALUES (?, ?, ?, ?, 'compression')`,
  ).run(forkId, localSessionKey(logicalId), new Date().toISOString(), receipt.current_session_id);
}
