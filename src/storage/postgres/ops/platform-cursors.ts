/** Storage operations on the catch-up cursors on PostgreSQL (migration 013). */
import type { Sql } from '../database.js';

export async function selectCursors(sql: Sql, platform: string): Promise<Map<string, string>> {
  const rows = await sql.rows<{ channel_id: string; message_id: string }>(
    'SELECT channel_id, message_id FROM platform_cursors WHERE platform = $1',
    [platform],
  );
  return new Map(rows.map((row) => [row.channel_id, row.message_id]));
}

export async function upsertCursor(
  sql: Sql,
  platform: string,
  channelId: string,
  messageId: string,
  at: Date,
): Promise<void> {
  await sql.run(
    `INSERT INTO platform_cursors (platform, channel_id, message_id, updated_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (platform, channel_id) DO UPDATE SET message_id = EXCLUDED.message_id, updated_at = EXCLUDED.updated_at`,
    [platform, channelId, messageId, at.toISOString()],
  );
}
