/**
 * 029: the env and header values of sessions' own MCP servers leave the store (docs/decisions.md
 * "Session MCP server values in memory only"). Before, a session's own servers were kept in full in
 * its creation receipt (and in a delegation's stored launch, and a job's), so an API key or bearer
 * token an editor passed reached the disk. Each value becomes "" (its name stays: the server still
 * needs it, and waits for it to be supplied again); a receipt's creation_digest, which hashed the
 * values, is replaced by a marker. secure_delete overwrites the old bytes in the file as the rows
 * are rewritten, rather than leaving them in free space.
 */
import type Database from 'better-sqlite3';
import type { Migration } from '../migration.js';
import { scrubJobTarget, scrubLaunch, scrubReceipt } from '../../rows/mcp-scrub.js';

export const migration: Migration = {
  version: 29,
  name: 'mcp_values',
  up(db) {
    const before = db.pragma('secure_delete', { simple: true }) as number;
    db.pragma('secure_delete = ON');
    try {
      rewrite(db, 'private_receipts', 'key', 'body', scrubReceipt);
      rewrite(db, 'delegations', 'delegation_id', 'launch', scrubLaunch);
      rewrite(db, 'scheduled_jobs', 'job_id', 'target', scrubJobTarget);
    } finally {
      db.pragma(`secure_delete = ${before}`);
    }
  },
};

/** Rewrites the JSON column of every row whose scrubbed text differs (null: unchanged). */
function rewrite(
  db: Database.Database,
  table: string,
  key: string,
  column: string,
  scrub: (json: string) => string | null,
): void {
  const rows = db.prepare(`SELECT ${key} AS k, ${column} AS v FROM ${table}`).all() as {
    k: string;
    v: string;
  }[];
  const update = db.prepare(`UPDATE ${table} SET ${column} = ? WHERE ${key} = ?`);
  for (const row of rows) {
    const scrubbed = scrub(row.v);
    if (scrubbed !== null) update.run(scrubbed, row.k);
  }
}
