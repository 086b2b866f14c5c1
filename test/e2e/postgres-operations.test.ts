/**
 * Operating a daemon on PostgreSQL (issue 14) with the commands docs/storage.md shows
 * ("Operating a PostgreSQL store"), exactly as shown there: `gatehouse doctor` connects and checks
 * the schema's version, a read and the search index (and repairs the index), `gatehouse backup`
 * refuses and names pg_dump (whose command is run here too), `gatehouse status` shows the store
 * the running daemon opened, not what the config says now. The URL is never printed.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import { isOneLineError, runCli, tempHome } from './cli.js';
import { writeConfig } from './gateway-harness.js';
import { createAttached, runTurn, tempDir, useFixture } from './seed-fixture.js';
import { createTestSchema, inSchema, type TestSchema } from '../shared/postgres.js';

const fx = useFixture();
const VAR = 'GATEHOUSE_PG_URL';
const STORE = `store:\n  kind: postgres\n  url_env: ${VAR}`;
const schemas: TestSchema[] = [];
afterEach(async () => {
  for (const s of schemas.splice(0)) await s.drop();
});

interface Doctor {
  ok: boolean;
  checks: { name: string; ok: boolean; detail: string; fix?: string }[];
  repaired?: string[];
}

async function doctor(home: string, env: NodeJS.ProcessEnv, ...args: string[]) {
  const run = await runCli(home, ['doctor', '--json', ...args], { env });
  return { code: run.code, report: JSON.parse(run.stdout) as Doctor, raw: run.stdout + run.stderr };
}

const byName = (report: Doctor, name: string) => report.checks.find((c) => c.name === name);

/** A daemon on a fresh schema that ran one turn, stopped; its home, env and schema. */
async function storedHome(): Promise<{ home: string; env: NodeJS.ProcessEnv; schema: TestSchema }> {
  const schema = await createTestSchema();
  schemas.push(schema);
  const env = { [VAR]: schema.url };
  const d = await fx.daemon({ extraConfig: STORE, env });
  const client = await d.connect();
  const session_id = await createAttached(client, { cwd: tempDir() });
  await runTurn(client, session_id, 's1', 'words to find in postgres');
  // A search brings the index up to every stored message first, so what doctor sees is settled.
  const { hits } = await client.call<{ hits: unknown[] }>('session.search', { query: 'postgres' });
  expect(hits.length).toBeGreaterThan(0);
  await d.stop();
  fx.forget(d);
  // Doctor's permission checks are not what this file is about.
  spawnSync('chmod', ['-R', 'go-rwx', d.home]);
  return { home: d.home, env, schema };
}

describe('gatehouse doctor on a PostgreSQL store', { timeout: 180_000 }, () => {
  it('connects with the URL from store.url_env and checks the schema version, a read and the search index', async () => {
    const { home, env, schema } = await storedHome();
    const { code, report, raw } = await doctor(home, env);
    expect(code).toBe(0);
    expect(report.ok).toBe(true);
    expect(byName(report, 'store')!.detail).toBe(
      `postgres: connected (URL from ${VAR}), schema ${schema.name}`,
    );
    expect(byName(report, 'schema')!.detail).toMatch(
      new RegExp(`^schema ${schema.name} is at version \\d+ \\(current\\)$`),
    );
    expect(byName(report, 'database')!.detail).toMatch(/^1 sessions and \d+ messages read$/);
    expect(byName(report, 'search')!.detail).toMatch(/^search index ok \(\d+ messages\)$/);
    expect(raw).not.toContain(schema.url);

    // `gatehouse doctor`, as docs/storage.md shows it.
    const plain = await runCli(home, ['doctor'], { env });
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain(
      `ok    store: postgres: connected (URL from ${VAR}), schema ${schema.name}`,
    );
    expect(plain.stdout).toContain('All checks passed.');
  });

  it('finds a damaged search index; --repair-search rebuilds it from the stored messages', async () => {
    const { home, env, schema } = await storedHome();
    await inSchema(schema.name, (c) => c.query('DELETE FROM messages_search'));
    const broken = await doctor(home, env);
    expect(broken.code).toBe(1);
    const search = byName(broken.report, 'search')!;
    expect(search.ok).toBe(false);
    expect(search.detail).toMatch(/^the search index holds 0 of the \d+ messages it should$/);
    expect(search.fix).toContain('gatehouse doctor --repair-search');

    // `gatehouse doctor --repair-search`, as docs/storage.md shows it.
    const repair = await runCli(home, ['doctor', '--repair-search'], { env });
    expect(repair.code).toBe(0);
    expect(repair.stdout).toContain(
      'Rebuilt the search index of the PostgreSQL store from its stored messages.',
    );
    const indexed = await inSchema(schema.name, (c) =>
      c.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM messages_search WHERE document @@ plainto_tsquery('simple', 'postgres')",
      ),
    );
    expect(indexed.rows[0]!.n).toBeGreaterThan(0);
    expect((await doctor(home, env)).report.ok).toBe(true);
  });

  it('says which variable to export when it is not set, and fails clearly when the server is unreachable', async () => {
    const home = tempHome();
    writeConfig(home, STORE);
    spawnSync('chmod', ['-R', 'go-rwx', home]);
    const missing = await doctor(home, { [VAR]: '' });
    expect(missing.code).toBe(1);
    const store = byName(missing.report, 'store')!;
    expect(store.ok).toBe(false);
    expect(store.detail).toBe(`postgres (URL from $${VAR}), but ${VAR} is not set in this environment`);
    expect(store.fix).toContain(`export ${VAR}=postgres://`);

    // Nothing listens on port 1; the password in the URL must not be printed.
    const url = 'postgres://gatehouse:sekrit-pw@127.0.0.1:1/test';
    const down = await doctor(home, { [VAR]: url });
    expect(down.code).toBe(1);
    const unreachable = byName(down.report, 'store')!;
    expect(unreachable.ok).toBe(false);
    expect(unreachable.detail).toMatch(
      new RegExp(`^cannot reach the PostgreSQL server whose URL is in ${VAR}: .*ECONNREFUSED`),
    );
    expect(unreachable.fix).toContain(`fix the URL in ${VAR}`);
    expect(down.raw).not.toContain('sekrit-pw');
    expect(byName(down.report, 'schema')).toBeUndefined();
  });
  it("fails the schema check of a schema newer than this Gatehouse, and of one holding another program's tables", async () => {
    const home = tempHome();
    writeConfig(home, STORE);
    spawnSync('chmod', ['-R', 'go-rwx', home]);
    const newer = await createTestSchema();
    const foreign = await createTestSchema();
    schemas.push(newer, foreign);
    await inSchema(newer.name, async (c) => {
      await c.query(
        'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
      );
      await c.query("INSERT INTO schema_migrations VALUES (999, 'from the future', 'now')");
    });
    await inSchema(foreign.name, (c) => c.query('CREATE TABLE invoices (id INTEGER)'));

    const tooNew = byName((await doctor(home, { [VAR]: newer.url })).report, 'schema')!;
    expect(tooNew.ok).toBe(false);
    expect(tooNew.detail).toMatch(
      new RegExp(`^schema ${newer.name} is at version 999, newer than this Gatehouse \\(\\d+\\)$`),
    );
    const other = await doctor(home, { [VAR]: foreign.url });
    expect(other.code).toBe(1);
    const check = byName(other.report, 'schema')!;
    expect(check.detail).toBe(
      `schema ${foreign.name} holds tables of some other program (no schema_migrations)`,
    );
    expect(check.fix).toContain('empty schema');
    // Nothing was migrated into it: doctor only reads.
    const tables = await inSchema(foreign.name, (c) =>
      c.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema()',
      ),
    );
    expect(tables.rows[0]!.n).toBe(1);
  });
});

describe('gatehouse backup and status on a PostgreSQL store', { timeout: 180_000 }, () => {
  it('backup refuses and names pg_dump, whose documented command copies the schema; the documented psql restores it', async () => {
    const { home, env, schema } = await storedHome();
    // `gatehouse backup`, as docs/storage.md shows it.
    const refused = await runCli(home, ['backup'], { env });
    expect(refused.code).not.toBe(0);
    expect(isOneLineError(refused.stderr)).toBe(true);
    expect(refused.stderr).toContain('this store is PostgreSQL (store.kind: postgres)');
    expect(refused.stderr).toContain(`pg_dump --schema=SCHEMA --file=gatehouse.sql "$${VAR}"`);
    expect(refused.stderr).not.toContain(schema.url);

    // The pg_dump command docs/storage.md gives, with this test's schema for SCHEMA.
    const dir = tempDir();
    const dump = spawnSync('sh', ['-c', `pg_dump --schema=${schema.name} --file=gatehouse.sql "$${VAR}"`], {
      cwd: dir,
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    expect(dump.stderr).toBe('');
    expect(dump.status).toBe(0);
    const sql = readFileSync(join(dir, 'gatehouse.sql'), 'utf8');
    expect(sql).toContain(`CREATE TABLE ${schema.name}.messages`);
    expect(sql).toContain('words to find in postgres');

    // The restore docs/storage.md gives: the schema gone, the dump brings it and its rows back.
    await schema.drop();
    const restore = spawnSync('sh', ['-c', `psql "$${VAR}" --file=gatehouse.sql`], {
      cwd: dir,
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    expect(restore.stderr).toBe('');
    expect(restore.status).toBe(0);
    const restored = await inSchema(schema.name, (c) =>
      c.query<{ content: string }>('SELECT content FROM messages ORDER BY id'),
    );
    expect(restored.rows.map((r) => r.content)).toContain('words to find in postgres');
  });

  it('status shows the store the running daemon opened, even after the config changed', async () => {
    const schema = await createTestSchema();
    schemas.push(schema);
    const env = { [VAR]: schema.url };
    const d = await fx.daemon({ extraConfig: STORE, env });
    const expected = `postgres (schema ${schema.name}, URL from $${VAR})`;
    const json = await runCli(d.home, ['status', '--json']);
    expect((JSON.parse(json.stdout) as { store: string }).store).toBe(expected);
    expect(json.stdout).not.toContain(schema.url);
    // The config now says sqlite; the running daemon still stores on postgres, and status says so.
    const file = homeLayout(d.home).configFile;
    writeFileSync(file, readFileSync(file, 'utf8').replace(STORE, ''));
    // `gatehouse status`, as docs/storage.md shows it.
    const text = await runCli(d.home, ['status']);
    expect(text.stdout).toMatch(new RegExp(`store: +${expected.replace(/[()$]/g, '\\$&')}\\n`));
    await d.stop();
    fx.forget(d);
    // Stopped, status can only say what the config selects.
    const stopped = await runCli(d.home, ['status', '--json']);
    expect((JSON.parse(stopped.stdout) as { store: string }).store).toBe(
      'sqlite (state.db in the profile folder)',
    );
  });
});
