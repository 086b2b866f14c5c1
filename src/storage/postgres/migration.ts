/**
 * Schema migrations on PostgreSQL (STO-6): the same numbers as the SQLite ones (a test holds the two
 * lists equal), forward-only, each in its own transaction together with its row in
 * schema_migrations, so a failure leaves the previous version intact. An advisory lock keyed by the
 * schema serialises instances that start at once. A schema newer than the code is refused before
 * anything is written.
 */
import { MigrationFailedError, SchemaTooNewError, StorageUnavailableError } from '../../domain/errors.js';
import type { PgDatabase, Sql } from './database.js';

export interface PgMigration {
  readonly version: number;
  readonly name: string;
  /** The statements, run in the migration's transaction. */
  readonly sql: string;
  /** No SQLite counterpart (the parity test skips it): only a shared server carries it. */
  readonly postgresOnly?: boolean;
}

export function latestVersion(migrations: readonly PgMigration[]): number {
  return migrations.reduce((max, m) => Math.max(max, m.version), 0);
}

const SCHEMA_MIGRATIONS = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  applied_at TEXT NOT NULL
)`;

/** The versions recorded in the connection's schema (empty for one never migrated). */
export async function recordedVersions(sql: Sql): Promise<Set<number>> {
  const table = await sql.row(
    `SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`,
    ['schema_migrations'],
  );
  if (table === null) {
    const foreign = await sql.row<{ n: number }>(
      `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema()`,
    );
    if ((foreign?.n ?? 0) > 0) throw new ForeignSchema();
    return new Set();
  }
  const rows = await sql.rows<{ version: number }>('SELECT version FROM schema_migrations');
  return new Set(rows.map((r) => r.version));
}

class ForeignSchema extends Error {}

function literal(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/**
 * Applies every pending migration in order; returns the versions applied. The schema's advisory
 * lock is held throughout, so another instance starting at once waits and then finds them applied.
 * Each migration and its schema_migrations row go to the server as one multi-statement query,
 * which PostgreSQL runs as one transaction: all of it, or none of it.
 */
export async function migrate(db: PgDatabase, migrations: readonly PgMigration[]): Promise<number[]> {
  const known = latestVersion(migrations);
  return db.exclusive(async (sql) => {
    await sql.run(`SELECT pg_advisory_lock(hashtext('gatehouse:' || current_schema()))`);
    try {
      let recorded: Set<number>;
      try {
        recorded = await recordedVersions(sql);
      } catch (error) {
        if (!(error instanceof ForeignSchema)) throw error;
        throw new StorageUnavailableError(
          db.name,
          'the schema holds tables of some other program (no schema_migrations); choose an empty schema',
        );
      }
      const found = Math.max(0, ...recorded);
      if (found > known) throw new SchemaTooNewError(db.name, found, known);
      const applied: number[] = [];
      for (const m of migrations) {
        if (recorded.has(m.version)) continue;
        try {
          await sql.run(
            `${SCHEMA_MIGRATIONS};\n${m.sql};\nINSERT INTO schema_migrations (version, name, applied_at) ` +
              `VALUES (${m.version}, ${literal(m.name)}, ${literal(new Date().toISOString())})`,
          );
        } catch (error) {
          if (error instanceof StorageUnavailableError) throw error;
          throw new MigrationFailedError(db.name, m.version, m.name, error);
        }
        applied.push(m.version);
      }
      return applied;
    } finally {
      await sql
        .run(`SELECT pg_advisory_unlock(hashtext('gatehouse:' || current_schema()))`)
        .catch(() => undefined);
    }
  });
}
