/** The request keys of the OpenAI-compatible endpoint (migration 020), as SQLite's request-keys.ts. */
import type { RequestKeyClaim, RequestKeyClaimResult } from '../../../domain/ports/local-store.js';
import type { Sql } from '../database.js';

const RETENTION_MS = 24 * 3600 * 1000;

export async function claimRequestKey(sql: Sql, claim: RequestKeyClaim): Promise<RequestKeyClaimResult> {
  const cutoff = new Date(Date.parse(claim.at) - RETENTION_MS).toISOString();
  await sql.run('DELETE FROM request_keys WHERE created_at < $1', [cutoff]);
  const key = [claim.profile, claim.owner.subject, claim.owner.provider, claim.key_hash];
  const inserted = await sql.run(
    `INSERT INTO request_keys (profile, principal_subject, principal_provider, key_hash, digest, logical_id, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
    [...key, claim.digest, claim.logical_id, claim.at],
  );
  if (inserted > 0) return { kind: 'claimed' };
  const row = await sql.row<{ digest: string; logical_id: string }>(
    `SELECT digest, logical_id FROM request_keys
     WHERE profile = $1 AND principal_subject = $2 AND principal_provider = $3 AND key_hash = $4`,
    key,
  );
  return { kind: 'existing', digest: row!.digest, logical_id: row!.logical_id };
}
