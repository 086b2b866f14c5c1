/**
 * 016: nothing on SQLite. The shared event table of a cluster (PostgreSQL's 016) exists only where
 * several instances share the store; a SQLite gateway keeps its events in memory as before. The
 * number is taken here so both lists stay equal (test/unit/storage/migration-parity.test.ts).
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 16,
  name: 'session_events',
  up() {},
};
