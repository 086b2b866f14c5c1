/**
 * The PostgreSQL state database (STO-1, STO-5, STO-6): one connection per store, on which every
 * operation runs in turn, so a store sees its own writes in order exactly as the SQLite store does on
 * its single connection. The connection is checked before anything is written: a server that cannot
 * be reached, a schema of some other program, or a schema newer than this code is refused with a
 * StorageUnavailableError naming the schema (never the URL, which may hold a password). Every commit
 * is durable when it returns: `synchronous_commit` is set to `on` and verified.
 */
import pg from 'pg';
import { GatehouseError, StorageUnavailableError } from '../../domain/errors.js';
import { migrate, type PgMigration } from './migration.js';
import { MIGRATIONS } from './migrations/index.js';

/** What the operations see of the connection: parameterised statements, `$1`, `$2`, … */
export interface Sql {
  rows<T>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** The first row, or null. */
  row<T>(text: string, params?: readonly unknown[]): Promise<T | null>;
  /** Runs a statement; resolves with the number of rows it changed. */
  run(text: string, params?: readonly unknown[]): Promise<number>;
}

export interface PgOpenOptions {
  /** Tests pass a prefix of the list to build databases at earlier versions. */
  migrations?: readonly PgMigration[];
  /** How the server lists the connection (pg_stat_activity); default `gatehouse`. */
  applicationName?: string;
}

/** BIGINT columns (ids, counters, epoch seconds) hold far less than 2^53: read them as numbers. */
const INT8_OID = 20;
const TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary'): (value: string) => unknown {
    if (oid === INT8_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format) as (value: string) => unknown;
  },
};

export class PgDatabase implements Sql {
  /** Connects to `url`, checks the server and the schema, and applies pending migrations. */
  static async open(url: string, options: PgOpenOptions = {}): Promise<PgDatabase> {
    const db = await PgDatabase.connect(url, { applicationName: options.applicationName });
    try {
      await migrate(db, options.migrations ?? MIGRATIONS);
      return db;
    } catch (error) {
      await db.client.end().catch(() => undefined);
      if (error instanceof GatehouseError) throw error;
      throw new StorageUnavailableError(db.name, describe(error), { cause: error });
    }
  }

  /**
   * Connects to `url` and checks the server and that a schema is selected, migrating nothing: what
   * `gatehouse doctor` inspects with. `open` is this followed by the migrations.
   */
  static async connect(
    url: string,
    options: { timeoutMs?: number; applicationName?: string } = {},
  ): Promise<PgDatabase> {
    const client = new pg.Client({
      connectionString: url,
      types: TYPES,
      application_name: options.applicationName ?? 'gatehouse',
      ...(options.timeoutMs === undefined ? {} : { connectionTimeoutMillis: options.timeoutMs }),
    });
    const db = new PgDatabase(client, 'PostgreSQL');
    client.on('error', (error) => db.lose(error));
    try {
      await client.connect();
      const schema = await client.query<{ schema: string | null }>('SELECT current_schema() AS schema');
      const name = schema.rows[0]?.schema;
      if (!name) throw new StorageUnavailableError(db.name, 'no schema is selected (check search_path)');
      db.name = `PostgreSQL schema ${name}`;
      db.schema = name;
      await client.query('SET synchronous_commit TO on');
      const sync = await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
      if (sync.rows[0]?.synchronous_commit !== 'on') {
        throw new StorageUnavailableError(db.name, 'synchronous_commit = on did not take effect');
      }
      return db;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (error instanceof GatehouseError) throw error;
      throw new StorageUnavailableError(db.name, describe(error), { cause: error });
    }
  }

  /** The schema the connection works in (`current_schema()`), known once connected. */
  schema = '';

  private chain: Promise<unknown> = Promise.resolve();
  private failure: StorageUnavailableError | null = null;
  private closed = false;
  private depth = 0;

  private constructor(
    private readonly client: pg.Client,
    /** How errors name this store: the schema, never the URL. */
    public name: string,
  ) {}

  /**
   * `fn` alone on the connection: operations queued behind it wait, so each one's statements run
   * back to back, as on SQLite's single connection.
   */
  exclusive<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    const run = this.chain.then(() => {
      if (this.failure) throw this.failure;
      return fn(this);
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** `fn` in one transaction, alone on the connection: all of it commits durably, or none of it. */
  transaction<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.exclusive(() => this.inTransaction(fn));
  }

  /** BEGIN … COMMIT around `fn`, on a connection the caller already holds exclusively. */
  async inTransaction<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    await this.run('BEGIN');
    let value: T;
    try {
      value = await fn(this);
    } catch (error) {
      await this.run('ROLLBACK').catch(() => undefined);
      throw error;
    }
    await this.run('COMMIT');
    return value;
  }

  /** `fn` in a savepoint of the open transaction: when it throws, only its own writes are undone. */
  async savepoint<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    const name = `op_${++this.depth}`;
    await this.run(`SAVEPOINT ${name}`);
    try {
      const value = await fn(this);
      await this.run(`RELEASE SAVEPOINT ${name}`);
      return value;
    } catch (error) {
      if (this.failure) throw this.failure;
      await this.run(`ROLLBACK TO SAVEPOINT ${name}`);
      await this.run(`RELEASE SAVEPOINT ${name}`);
      throw error;
    } finally {
      this.depth--;
    }
  }

  async rows<T>(text: string, params: readonly unknown[] = []): Promise<T[]> {
    return (await this.query(text, params)).rows as T[];
  }

  async row<T>(text: string, params: readonly unknown[] = []): Promise<T | null> {
    const rows = await this.rows<T>(text, params);
    return rows[0] ?? null;
  }

  async run(text: string, params: readonly unknown[] = []): Promise<number> {
    return (await this.query(text, params)).rowCount ?? 0;
  }

  private async query(text: string, params: readonly unknown[]): Promise<pg.QueryResult> {
    if (this.failure) throw this.failure;
    try {
      return await this.client.query(text, params as unknown[]);
    } catch (error) {
      throw this.classify(error);
    }
  }

  /**
   * Failures of the server or the connection become StorageUnavailableError (the client is told
   * `storage_unavailable`); a lost connection also refuses every later operation, since what the
   * last commit did is unknown until the daemon restarts and reads the database again. Errors of a
   * statement itself (a constraint) pass through unchanged.
   */
  private classify(error: unknown): unknown {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && /^(08|53|57|58|XX)/.test(code)) {
      if (/^(08|57P)/.test(code)) this.lose(error);
      return new StorageUnavailableError(this.name, describe(error), { cause: error });
    }
    if (!(error instanceof Error) || typeof code !== 'string') {
      this.lose(error);
      return this.failure ?? error;
    }
    return error;
  }

  private lose(error: unknown): void {
    this.failure ??= new StorageUnavailableError(
      this.name,
      this.closed
        ? 'the store is closed'
        : `the connection to the server was lost (${describe(error)}); restart the daemon`,
      { cause: error },
    );
  }

  /** Why the store refuses every operation (a lost connection, or closed), or null while it works. */
  get failed(): StorageUnavailableError | null {
    return this.failure;
  }

  /** Waits for the operations queued so far, then closes the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.chain;
    this.lose(new Error('closed'));
    await this.client.end().catch(() => undefined);
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}
