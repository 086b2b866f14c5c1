/**
 * 026: durable steer (issue 28). `admissions.mode` says whether an admission is a prompt (a turn of
 * its own) or a steer (a correction of the running turn, applied at its next model-call boundary);
 * `applied_to` names the turn a steer was applied in (null: not applied; it ran, or runs, as a turn).
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 26,
  name: 'steers',
  up(db) {
    db.exec(`ALTER TABLE admissions ADD COLUMN mode TEXT NOT NULL DEFAULT 'prompt';
      ALTER TABLE admissions ADD COLUMN applied_to TEXT;`);
  },
};
