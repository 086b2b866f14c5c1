/**
 * Schema migrations (STO-6): numbered, forward-only, append-only. Each migration runs in its own
 * transaction together with its row in schema_migrations, so a failure leaves the previous version
 * intact. A database whose version is newer than the code is refused before anything is written.
 * Adding a migration = a new file in migrations/ and one line in migrations/index.ts.
 */
import type Database from 'better-sqlite3';
import { MigrationFailedError, SchemaTooNewError } from '../../domain/errors.js';

export interface Migration {
  /**
   * 1, 2, 3, … increasing; never renumbered once released. Numbers are handed out to work in
   * progress in parallel, so a build may lack some (009 before 007 lands): a migration runs when its
   * own number is not recorded yet, not when it is above the highest one.
   */
  readonly version: number;
  readonly name: string;
  up(db: Database.Database): void;
}

/** The highest version recorded in the database; 0 for a database never migrated. Reads only. */
export function schemaVersion(db: Database.Database): number {
  const table = db
    .prepare(`SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'`)
    .get();
  if (table === undefined) return 0;
  const row = db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number | null };
  return row.v ?? 0;
}

export function assertNotTooNew(db: Database.Database, file: string, migrations: readonly Migration[]): void {
  const known = latestVersion(migrations);
  const found = schemaVersion(db);
  if (found > known) throw new SchemaTooNewError(file, found, known);
}

export function latestVersion(migrations: readonly Migration[]): number {
  return migrations.reduce((max, m) => Math.max(max, m.version), 0);
}

const SCHEMA_MIGRATIONS = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  applied_at TEXT NOT NULL
) STRICT`;

/** Applies every pending migration in order. Returns the versions applied. */
export function migrate(db: Database.Database, file: string, migrations: readonly Migration[]): number[] {
  assertSequence(migrations);
  assertNotTooNew(db, file, migrations);
  const recorded = recordedVersions(db);
  const applied: number[] = [];
  for (const m of migrations) {
    if (recorded.has(m.version)) continue;
    try {
      db.transaction(() => {
        // Created with the first migration, so a failed first migration leaves the file untouched.
        db.exec(SCHEMA_MIGRATIONS);
        m.up(db);
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
          m.version,
          m.name,
          new Date().toISOString(),
        );
      }).immediate();
    } catch (error) {
      throw new MigrationFailedError(file, m.version, m.name, error);
    }
    applied.push(m.version);
  }
  return applied;
}

function recordedVersions(db: Database.Database): Set<number> {
  if (schemaVersion(db) === 0) return new Set();
  const rows = db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[];
  return new Set(rows.map((row) => row.version));
}

function assertSequence(migrations: readonly Migration[]): void {
  migrations.forEach((m, i) => {
    const previous = i === 0 ? 0 : migrations[i - 1]!.version;
    if (!Number.isInteger(m.version) || m.version <= previous) {
      throw new Error(`migrations must be numbered in increasing order; position ${i} holds ${m.version}`);
    }
  });
}
