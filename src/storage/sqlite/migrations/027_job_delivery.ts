/**
 * 027: where a scheduled job's result goes (issue 28, docs/scheduling.md "Home channels"):
 * `session` (the target session only, what every job before this did) or `home:<platform>` (also
 * the platform's home channel, through the delivery ledger).
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 27,
  name: 'job_delivery',
  up(db) {
    db.exec(`ALTER TABLE scheduled_jobs ADD COLUMN deliver TEXT NOT NULL DEFAULT 'session';`);
  },
};
