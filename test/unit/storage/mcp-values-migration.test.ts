/**
 * Migration 029 on both stores: rows written before it kept the env and header values of sessions'
 * own MCP servers (a creation receipt's policy, a delegation's launch, a job's new-session target).
 * After it, every value is "" with its name kept, the receipt's digest (which hashed the values) is
 * the scrubbed marker, other rows are untouched, and the secret is nowhere: not in a row, and on
 * SQLite not in the file's bytes either (secure_delete).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DIGEST_SCRUBBED } from '../../../src/domain/local/receipt.js';
import { PgDatabase } from '../../../src/storage/postgres/database.js';
import { MIGRATIONS as PG_MIGRATIONS } from '../../../src/storage/postgres/migrations/index.js';
import { openDatabase } from '../../../src/storage/sqlite/database.js';
import { MIGRATIONS } from '../../../src/storage/sqlite/migrations/index.js';
import { createTestSchema, inSchema, type TestSchema } from '../../shared/postgres.js';

const SECRET = 'sk-sentinel-029-quokka';
const BEFORE_029 = MIGRATIONS.findIndex((m) => m.version === 29);
const PG_BEFORE_029 = PG_MIGRATIONS.findIndex((m) => m.version === 29);

const stdio = { command: '/bin/true', args: [], env: { API_KEY: SECRET, EMPTY: '' }, enabled: true };
const http = {
  url: 'https://mcp.example/mcp',
  headers: { Authorization: `Bearer ${SECRET}` },
  enabled: true,
};

function receipt(id: string, own: Record<string, unknown>): string {
  return JSON.stringify({
    kind: 'gateway.local_policy.v1',
    logical_id: id,
    current_session_id: id,
    owner: { subject: 'native:owner', provider: 'native' },
    profile: 'default',
    request_id: 'r1',
    creation_digest: 'a'.repeat(64),
    policy: { source: 'acp', cwd: '/tmp', model: 'demo', toolsets: [], mcp_servers: { profile: ['p'], own } },
    lineage: [],
    created_at: 'now',
  });
}

/** The rows planted at version 28, as [table, key column, key, JSON column, JSON]. */
const PLANTED: [string, string, string, string, string][] = [
  [
    'private_receipts',
    'key',
    'gateway.local_policy.v1:s1',
    'body',
    receipt('s1', { tool: stdio, web: http }),
  ],
  [
    'private_receipts',
    'key',
    'gateway.local_policy.v1:s2',
    'body',
    receipt('s2', { bare: { ...stdio, env: {} } }),
  ],
  ['private_receipts', 'key', 'gateway.local_policy.v1:s3', 'body', `{not json ${SECRET.slice(0, 3)}`],
  [
    'delegations',
    'delegation_id',
    'd1',
    'launch',
    JSON.stringify({ cwd: '/tmp', mcp_servers: { tool: stdio, p: { enabled: false } } }),
  ],
  [
    'scheduled_jobs',
    'job_id',
    'j1',
    'target',
    JSON.stringify({ kind: 'new_session', launch: { mcp_servers: { web: http } } }),
  ],
];

const EXTRA: Record<string, [string, unknown][]> = {
  private_receipts: [],
  delegations: [
    ['profile', 'default'],
    ['parent_id', 's1'],
    ['request_id', 'r'],
    ['owner', 'o'],
    ['task', 't'],
    ['depth', 1],
    ['state', 'starting'],
    ['created_at', 'now'],
  ],
  scheduled_jobs: [
    ['profile', 'default'],
    ['request_id', 'r'],
    ['owner', 'o'],
    ['schedule', '{}'],
    ['text', 't'],
    ['policy', '{}'],
    ['created_at', 'now'],
  ],
};

function insertSql(table: string, keyCol: string, col: string, placeholder: (i: number) => string): string {
  const cols = [keyCol, col, ...EXTRA[table]!.map(([c]) => c)];
  return `INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map((_, i) => placeholder(i + 1)).join(', ')})`;
}

/** What every planted row must read after 029. */
function expectScrubbed(read: (table: string, keyCol: string, key: string, col: string) => string): void {
  const s1 = JSON.parse(read('private_receipts', 'key', 'gateway.local_policy.v1:s1', 'body')) as {
    creation_digest: string;
    policy: { mcp_servers: unknown };
  };
  expect(s1.creation_digest).toBe(DIGEST_SCRUBBED);
  expect(s1.policy.mcp_servers).toEqual({
    profile: ['p'],
    own: {
      tool: { ...stdio, env: { API_KEY: '', EMPTY: '' } },
      web: { ...http, headers: { Authorization: '' } },
    },
  });
  // Nothing to scrub, or not JSON: left as they were.
  expect(read('private_receipts', 'key', 'gateway.local_policy.v1:s2', 'body')).toBe(PLANTED[1]![4]);
  expect(read('private_receipts', 'key', 'gateway.local_policy.v1:s3', 'body')).toBe(PLANTED[2]![4]);
  expect(JSON.parse(read('delegations', 'delegation_id', 'd1', 'launch'))).toEqual({
    cwd: '/tmp',
    mcp_servers: { tool: { ...stdio, env: { API_KEY: '', EMPTY: '' } }, p: { enabled: false } },
  });
  expect(JSON.parse(read('scheduled_jobs', 'job_id', 'j1', 'target'))).toEqual({
    kind: 'new_session',
    launch: { mcp_servers: { web: { ...http, headers: { Authorization: '' } } } },
  });
}

describe('migration 029 scrubs MCP server values on SQLite', () => {
  let dir = '';
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('old rows lose their env and header values, keep the names, and the file keeps no trace', () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-029-'));
    const file = path.join(dir, 'state.db');
    const old = openDatabase(file, { migrations: MIGRATIONS.slice(0, BEFORE_029) });
    for (const [table, keyCol, key, col, json] of PLANTED)
      old
        .prepare(insertSql(table, keyCol, col, () => '?'))
        .run(key, json, ...EXTRA[table]!.map(([, v]) => v));
    old.close();
    expect(fs.readFileSync(file).includes(SECRET)).toBe(true);

    const db = openDatabase(file, { migrations: MIGRATIONS });
    expectScrubbed(
      (table, keyCol, key, col) =>
        db.prepare(`SELECT ${col} FROM ${table} WHERE ${keyCol} = ?`).pluck().get(key) as string,
    );
    db.close();
    for (const name of fs.readdirSync(dir))
      expect(fs.readFileSync(path.join(dir, name)).includes(SECRET), name).toBe(false);
  });
});

describe('migration 029 scrubs MCP server values on PostgreSQL', () => {
  let schema: TestSchema | null = null;
  afterEach(async () => {
    await schema?.drop();
    schema = null;
  });

  it('old rows lose their env and header values and keep the names', async () => {
    schema = await createTestSchema();
    const s = schema;
    await (await PgDatabase.open(s.url, { migrations: PG_MIGRATIONS.slice(0, PG_BEFORE_029) })).close();
    await inSchema(s.name, async (c) => {
      for (const [table, keyCol, key, col, json] of PLANTED)
        await c.query(
          insertSql(table, keyCol, col, (i) => `$${i}`),
          [key, json, ...EXTRA[table]!.map(([, v]) => v)],
        );
    });
    const db = await PgDatabase.open(s.url, { migrations: PG_MIGRATIONS });
    await db.close();
    const rows = new Map<string, string>();
    await inSchema(s.name, async (c) => {
      for (const [table, keyCol, key, col] of PLANTED) {
        const r = await c.query<{ v: string }>(`SELECT ${col} AS v FROM ${table} WHERE ${keyCol} = $1`, [
          key,
        ]);
        rows.set(`${table}/${key}`, r.rows[0]!.v);
      }
      const anywhere = await c.query(
        `SELECT 1 FROM private_receipts WHERE body LIKE $1 UNION ALL SELECT 1 FROM delegations WHERE launch LIKE $1
         UNION ALL SELECT 1 FROM scheduled_jobs WHERE target LIKE $1`,
        [`%${SECRET}%`],
      );
      expect(anywhere.rowCount).toBe(0);
    });
    expectScrubbed((table, _keyCol, key) => rows.get(`${table}/${key}`)!);
  });
});
