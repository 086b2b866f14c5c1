/**
 * 008: the lineage of physical sessions (LIN-1..3) and idempotent rewinds.
 *
 * - `sessions.parent_session_id` + `sessions.lineage_kind` ('compression' | 'reset'): a child
 *   transcript names the parent it continues and how. Recovery checks every lineage step of a
 *   receipt against them (domain/local/lineage.ts): a step must be the parent's one recorded child,
 *   so a planted fork is refused instead of adopted. The columns are added only when missing, so
 *   this migration agrees with a compression migration that adds the same link.
 * - `rewinds.request_key`: session.undo and session.retry name their request, and a retry after a
 *   lost answer finds the rewind it already made instead of undoing another turn.
 */
import type Database from 'better-sqlite3';
import type { Migration } from '../migration.js';

function hasColumn(db: Database.Database, table: string, column: string): boolean {
  const columns = db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as { name: string }[];
  return columns.some((c) => c.name === column);
}

export const migration: Migration = {
  version: 8,
  name: 'lineage',
  up(db) {
    if (!hasColumn(db, 'sessions', 'parent_session_id')) {
      db.exec('ALTER TABLE sessions ADD COLUMN parent_session_id TEXT REFERENCES sessions (session_id)');
    }
    if (!hasColumn(db, 'sessions', 'lineage_kind')) {
      db.exec('ALTER TABLE sessions ADD COLUMN lineage_kind TEXT');
    }
    db.exec(`
      CREATE INDEX IF NOT EXISTS sessions_by_parent ON sessions (parent_session_id)
        WHERE parent_session_id IS NOT NULL;
      ALTER TABLE rewinds ADD COLUMN request_key TEXT;
      CREATE UNIQUE INDEX rewinds_by_request ON rewinds (request_key) WHERE request_key IS NOT NULL;
    `);
  },
};
