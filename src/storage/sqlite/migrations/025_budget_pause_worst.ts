/**
 * 025: what the call a budget refused could have taken (`paused_worst_tokens`, `paused_worst_usd`),
 * kept with the pause. A prompt to the paused session is refused while that call still would not
 * fit (docs/cost.md, "Budgets"): a session's next call is never smaller, its history only grows.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 25,
  name: 'budget_pause_worst',
  up(db) {
    db.exec(`
      ALTER TABLE budget_sessions ADD COLUMN paused_worst_tokens INTEGER;
      ALTER TABLE budget_sessions ADD COLUMN paused_worst_usd REAL;
    `);
  },
};
