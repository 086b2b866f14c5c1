/** 013 on PostgreSQL: catch-up cursors of chat platforms that do not redeliver (as SQLite's 013). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 13,
  name: 'platform_cursors',
  sql: `
    CREATE TABLE platform_cursors (
      platform    TEXT NOT NULL,
      channel_id  TEXT NOT NULL,
      message_id  TEXT NOT NULL,
      updated_at  TEXT NOT NULL,
      PRIMARY KEY (platform, channel_id)
    );
  `,
};
