/** Storage operations on the catch-up cursors (migration 013). */
import type Database from 'better-sqlite3';
import { statement } from '../statements.js';

type Db = Database.Database;

export function selectCursors(db: Db, platform: string): Map<string, string> {
  const rows = statement(db, 'SELECT channel_id, message_id FROM platform_cursors WHERE platform = ?').all(
    platform,
  ) as { channel_id: string; message_id: string }[];
  return new Map(rows.map((row) => [row.channel_id, row.message_id]));
}

export function upsertCursor(db: Db, platform: string, channelId: string, messageId: string, at: Date): void {
  statement(
    db,
    `INSERT INTO platform_cursors (platform, channel_id, message_id, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (platform, channel_id) DO UPDATE SET message_id = excluded.message_id, updated_at = excluded.updated_at`,
  ).run(platform, channelId, messageId, at.toISOString());
}
