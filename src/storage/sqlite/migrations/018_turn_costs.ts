/**
 * 018: what each turn cost (docs/cost.md), written with the turn's settlement, so it can be summed per
 * day, principal, provider and model. A turn that called no model has no row.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 18,
  name: 'turn_costs',
  up(db) {
    db.exec(`
      CREATE TABLE turn_costs (
        turn_id            TEXT PRIMARY KEY,
        session_key        TEXT NOT NULL,
        principal          TEXT NOT NULL,
        provider           TEXT NOT NULL,
        model              TEXT NOT NULL,
        day                TEXT NOT NULL,
        settled_at         TEXT NOT NULL,
        input_tokens       INTEGER NOT NULL,
        output_tokens      INTEGER NOT NULL,
        cache_read_tokens  INTEGER NOT NULL,
        cache_write_tokens INTEGER NOT NULL,
        cost_usd           REAL NOT NULL,
        cost_status        TEXT NOT NULL
      ) STRICT;
      CREATE INDEX turn_costs_by_day ON turn_costs (day, principal);
    `);
  },
};
