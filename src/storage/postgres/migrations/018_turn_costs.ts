/** 018 on PostgreSQL: what each turn cost (as SQLite's 018). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 18,
  name: 'turn_costs',
  sql: `
    CREATE TABLE turn_costs (
      turn_id            TEXT PRIMARY KEY,
      session_key        TEXT NOT NULL,
      principal          TEXT NOT NULL,
      provider           TEXT NOT NULL,
      model              TEXT NOT NULL,
      day                TEXT NOT NULL,
      settled_at         TEXT NOT NULL,
      input_tokens       BIGINT NOT NULL,
      output_tokens      BIGINT NOT NULL,
      cache_read_tokens  BIGINT NOT NULL,
      cache_write_tokens BIGINT NOT NULL,
      cost_usd           DOUBLE PRECISION NOT NULL,
      cost_status        TEXT NOT NULL
    );
    CREATE INDEX turn_costs_by_day ON turn_costs (day, principal);
  `,
};
