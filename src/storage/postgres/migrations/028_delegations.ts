/** 028 on PostgreSQL: background delegations (as SQLite's 028). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 28,
  name: 'delegations',
  sql: `
    CREATE TABLE delegations (
      delegation_id       TEXT PRIMARY KEY,
      profile             TEXT NOT NULL,
      parent_id           TEXT NOT NULL,
      request_id          TEXT NOT NULL,
      owner               TEXT NOT NULL,
      task                TEXT NOT NULL,
      launch              TEXT NOT NULL,
      depth               INTEGER NOT NULL,
      state               TEXT NOT NULL,
      child_id            TEXT,
      child_admission_id  TEXT,
      outcome             TEXT,
      detail              TEXT,
      result_admission_id TEXT,
      kept                INTEGER NOT NULL DEFAULT 0,
      created_at          TEXT NOT NULL,
      ended_at            TEXT,
      UNIQUE (parent_id, request_id)
    );
    CREATE INDEX delegations_open ON delegations (profile) WHERE state IN ('starting', 'running');
    CREATE INDEX delegations_by_parent ON delegations (parent_id, created_at);
    CREATE INDEX delegations_by_child ON delegations (child_id);
  `,
};
