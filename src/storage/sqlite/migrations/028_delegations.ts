/**
 * 028: background delegations (issue 28, docs/scheduling.md "Background delegations"). One row per
 * delegation, written before its child session exists; the child's ids derive from its
 * delegation_id, so a delegation recorded before a crash is carried on after it with the same ids,
 * and its result is admitted into the parent once.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 28,
  name: 'delegations',
  up(db) {
    db.exec(`
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
      ) STRICT;
      CREATE INDEX delegations_open ON delegations (profile) WHERE state IN ('starting', 'running');
      CREATE INDEX delegations_by_parent ON delegations (parent_id, created_at);
      CREATE INDEX delegations_by_child ON delegations (child_id);
    `);
  },
};
