/** The request keys of the OpenAI-compatible endpoint (migration 020): a key bound to its first request. */
import type { RequestKeyClaim, RequestKeyClaimResult } from '../../../domain/ports/local-store.js';
import type { SqliteDatabase } from '../database.js';
import { statement } from '../statements.js';

const RETENTION_MS = 24 * 3600 * 1000;

export function claimRequestKey(db: SqliteDatabase, claim: RequestKeyClaim): RequestKeyClaimResult {
  const cutoff = new Date(Date.parse(claim.at) - RETENTION_MS).toISOString();
  statement(db, 'DELETE FROM request_keys WHERE created_at < ?').run(cutoff);
  const key = [claim.profile, claim.owner.subject, claim.owner.provider, claim.key_hash];
  const inserted = statement(
    db,
    `INSERT INTO request_keys (profile, principal_subject, principal_provider, key_hash, digest, logical_id, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  ).run(...key, claim.digest, claim.logical_id, claim.at);
  if (inserted.changes > 0) return { kind: 'claimed' };
  const row = statement(
    db,
    `SELECT digest, logical_id FROM request_keys
     WHERE profile = ? AND principal_subject = ? AND principal_provider = ? AND key_hash = ?`,
  ).get(...key) as { digest: string; logical_id: string };
  return { kind: 'existing', digest: row.digest, logical_id: row.logical_id };
}
