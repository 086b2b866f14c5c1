/** Authority epochs (REC-3): opened by each daemon start, closed cleanly by a graceful stop. */
import type { SqliteDatabase } from '../database.js';
import { statement } from '../statements.js';

export function openEpoch(db: SqliteDatabase, instanceId: string, at: string): number {
  const info = statement(db, 'INSERT INTO authority_epochs (instance_id, started_at) VALUES (?, ?)').run(
    instanceId,
    at,
  );
  return Number(info.lastInsertRowid);
}

export function markCleanShutdown(db: SqliteDatabase, epoch: number, at: string): void {
  statement(db, 'UPDATE authority_epochs SET clean_shutdown_at = ? WHERE epoch = ?').run(at, epoch);
}
