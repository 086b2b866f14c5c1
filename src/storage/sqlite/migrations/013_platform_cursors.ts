/**
 * 013: catch-up cursors of chat platforms that do not redeliver. Discord's gateway replays missed
 * events only to a resumed session; a process that died starts a new one, and what was said
 * meanwhile has to be read back over REST. A row says: in this channel, every message up to
 * `message_id` was taken by the gateway (or was not for it), so the catch-up reads after it.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 13,
  name: 'platform_cursors',
  up(db) {
    db.exec(`
      CREATE TABLE platform_cursors (
        platform    TEXT NOT NULL,
        channel_id  TEXT NOT NULL,
        message_id  TEXT NOT NULL,
        updated_at  TEXT NOT NULL,
        PRIMARY KEY (platform, channel_id)
      ) STRICT, WITHOUT ROWID;
    `);
  },
};
