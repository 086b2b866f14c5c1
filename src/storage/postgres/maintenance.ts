/**
 * Owner maintenance of a PostgreSQL store, outside the daemon: the checks of `gatehouse doctor`
 * (the server answers, the schema's version, the stored rows read, the search index is whole) and a
 * rebuild of the derived search index. Each opens its own connection, migrates nothing and closes
 * it; the checks only read, so they are safe while the daemon runs. Findings name the variable that
 * holds the URL and the schema, never the URL (it may carry a password).
 */
import { GatehouseError, StorageUnavailableError } from '../../domain/errors.js';
import { PgDatabase } from './database.js';
import { latestVersion, recordedVersions } from './migration.js';
import { MIGRATIONS } from './migrations/index.js';
import { inspectIndex, rebuildIndex } from './ops/search-index.js';
import { countStored } from './ops/sessions.js';

export interface PgFinding {
  readonly ok: boolean;
  readonly detail: string;
  /** What to do, when it failed. */
  readonly fix?: string;
}

/** One finding per aspect; a later one is null when an earlier failure made it unknowable. */
export interface PgFindings {
  readonly server: PgFinding;
  readonly schema: PgFinding | null;
  readonly read: PgFinding | null;
  readonly search: PgFinding | null;
}

const CONNECT_TIMEOUT_MS = 10_000;

/** The server's or the driver's own words (the store's wrapper names no URL, but says less). */
function reasonOf(error: unknown): string {
  const cause =
    error instanceof StorageUnavailableError && error.cause instanceof Error ? error.cause : error;
  if (!(cause instanceof Error)) return String(cause);
  const code = (cause as { code?: unknown }).code;
  const driver = typeof code === 'string' && !(cause instanceof GatehouseError);
  return driver ? `${cause.message} (${code})` : cause.message;
}

/** Inspects the store whose URL `url` is; `variable` is how findings name it. */
export async function inspectPgStore(url: string, variable: string): Promise<PgFindings> {
  let db: PgDatabase;
  try {
    db = await PgDatabase.connect(url, { timeoutMs: CONNECT_TIMEOUT_MS });
  } catch (error) {
    return {
      server: {
        ok: false,
        detail: `cannot reach the PostgreSQL server whose URL is in ${variable}: ${reasonOf(error)}`,
        fix: `start the server (or check the network to it), or fix the URL in ${variable}`,
      },
      schema: null,
      read: null,
      search: null,
    };
  }
  try {
    const server: PgFinding = { ok: true, detail: `connected (URL from ${variable}), schema ${db.schema}` };
    const schema = await db.exclusive((sql) => schemaFinding(sql, db.schema));
    if (!schema.ok || schema.detail.includes('is empty')) return { server, schema, read: null, search: null };
    const read = await db.exclusive(async (sql) => {
      try {
        const { sessions, messages } = await countStored(sql);
        return { ok: true, detail: `${sessions} sessions and ${messages} messages read` };
      } catch (error) {
        return {
          ok: false,
          detail: `cannot read the stored sessions: ${reasonOf(error)}`,
          fix: `grant the role in ${variable} the use of schema ${db.schema} and its tables`,
        };
      }
    });
    const search = await db.exclusive(async (sql) => {
      try {
        return searchFinding(await inspectIndex(sql));
      } catch (error) {
        return { ok: false, detail: reasonOf(error), fix: REPAIR };
      }
    });
    return { server, schema, read, search };
  } finally {
    await db.close();
  }
}

const REPAIR =
  'the index is derived from the stored messages, so nothing is lost: stop the gateway and run "gatehouse doctor --repair-search"';

async function schemaFinding(
  sql: Parameters<typeof recordedVersions>[0],
  schema: string,
): Promise<PgFinding> {
  const latest = latestVersion(MIGRATIONS);
  let recorded: Set<number>;
  try {
    recorded = await recordedVersions(sql);
  } catch {
    return {
      ok: false,
      detail: `schema ${schema} holds tables of some other program (no schema_migrations)`,
      fix: 'point the URL at an empty schema of its own (its options=-csearch_path=… parameter)',
    };
  }
  const version = Math.max(0, ...recorded);
  if (version === 0)
    return { ok: true, detail: `schema ${schema} is empty: the first start creates the tables` };
  if (version > latest) {
    return {
      ok: false,
      detail: `schema ${schema} is at version ${version}, newer than this Gatehouse (${latest})`,
      fix: 'run the Gatehouse that wrote it (or a newer one); this one refuses to touch it',
    };
  }
  return {
    ok: true,
    detail:
      version === latest
        ? `schema ${schema} is at version ${version} (current)`
        : `schema ${schema} is at version ${version}; the next start migrates it to ${latest}`,
  };
}

function searchFinding(index: Awaited<ReturnType<typeof inspectIndex>>): PgFinding {
  if (!index.present)
    return { ok: false, detail: 'the search index table or its GIN index is missing', fix: REPAIR };
  if (index.stale) return { ok: true, detail: 'marked stale: the next search rebuilds it' };
  if (index.indexed !== index.expected) {
    return {
      ok: false,
      detail: `the search index holds ${index.indexed} of the ${index.expected} messages it should`,
      fix: REPAIR,
    };
  }
  return { ok: true, detail: `search index ok (${index.indexed} messages)` };
}

/** Drops and rebuilds the search index from the stored messages, in one transaction. */
export async function rebuildPgSearchIndex(url: string): Promise<void> {
  const db = await PgDatabase.connect(url, { timeoutMs: CONNECT_TIMEOUT_MS });
  try {
    await db.transaction((sql) => rebuildIndex(sql));
  } finally {
    await db.close();
  }
}
