/**
 * 024: `sessions.lineage_json`, a compression child's record (issue 26 item 1): whether the parent
 * was summarized or its oldest exchanges dropped, how many, and why no summary could be had. Local
 * sessions keep the same facts in their receipt; chat-platform sessions have no receipt, so the row
 * is where their lineage says it.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 24,
  name: 'compression_steps',
  up(db) {
    db.exec('ALTER TABLE sessions ADD COLUMN lineage_json TEXT');
  },
};
