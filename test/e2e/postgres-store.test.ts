/**
 * The daemon on PostgreSQL (`store.kind: postgres`, issue 14): local sessions run, survive a SIGKILL
 * and recover as on SQLite; the URL comes only from the variable `store.url_env` names, and a
 * missing variable or an unreachable server is a start-up error naming the variable, never the URL.
 * Each test works in a schema of its own, dropped afterwards.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, tempHome } from './cli.js';
import { writeConfig } from './gateway-harness.js';
import {
  modelConfig,
  quiet,
  tempDir,
  turnStarts,
  useRecoveryRig,
  type Ack,
  type Snapshot,
} from './recovery-harness.js';
import { createTestSchema, inSchema, schemaUrl, type TestSchema } from '../shared/postgres.js';

const VAR = 'GH_TEST_STORE_URL';
const STORE = `store: {kind: postgres, url_env: ${VAR}}`;
const schemas: TestSchema[] = [];
// Registered before the rig's cleanup, so it runs after it: the daemons are down before a drop.
afterEach(async () => {
  for (const s of schemas.splice(0)) await s.drop();
});
const rig = useRecoveryRig();

async function schema(): Promise<TestSchema> {
  const s = await createTestSchema();
  schemas.push(s);
  return s;
}

describe('store.kind: postgres runs local sessions with the same guarantees', () => {
  it('a turn runs and is stored in the schema; after SIGKILL mid-turn the turn resumes once and the queue runs once, in order', async () => {
    const s = await schema();
    const demo = await rig.model();
    const config = modelConfig(demo, STORE);
    const env = { [VAR]: s.url };
    let d = await rig.daemon({ config, env });
    let client = await d.connect();
    const { session_id } = await client.call<Snapshot>('session.create', {
      request_id: 'pg',
      cwd: tempDir(),
    });
    await client.call('prompt.submit', { session_id, submission_id: 'one', text: 'stored in postgres' });
    const first = await quiet(client, session_id);
    expect(first.messages.map((m) => m.content)).toContain('stored in postgres');
    const rows = await inSchema(s.name, (c) => c.query('SELECT state FROM admissions'));
    expect(rows.rows).toEqual([{ state: 'completed' }]);

    // A turn held by the model, and one queued behind it; the daemon dies mid-turn.
    demo.hold();
    const held = await client.call<Ack>('prompt.submit', { session_id, submission_id: 'two', text: 'held' });
    const queued = await client.call<Ack>('prompt.submit', {
      session_id,
      submission_id: 'three',
      text: 'after',
    });
    await demo.waitForRequests(2);
    await d.kill();
    demo.release();

    d = await rig.daemon({ home: d.home, config, env });
    expect(d.epoch).toBeGreaterThan(1);
    client = await d.connect();
    // REC-7 as on SQLite: the started turn resumes once from its stored boundary, the queued one
    // runs once after it, in order.
    const done = await quiet(client, session_id);
    expect(done.pending_admissions).toEqual([]);
    expect(turnStarts(demo, queued.admission_id)).toBe(1);
    const settled = await inSchema(s.name, (c) =>
      c.query<{ admission_id: string; state: string; resumes: number }>(
        'SELECT admission_id, state, resumes FROM admissions ORDER BY seq',
      ),
    );
    expect(settled.rows.slice(1)).toEqual([
      { admission_id: held.admission_id, state: 'completed', resumes: 1 },
      { admission_id: queued.admission_id, state: 'completed', resumes: 0 },
    ]);

    // Nothing of the store is on disk in the home, and the URL is in no file the daemon wrote.
    const log = readFileSync(d.layout.logFile, 'utf8');
    expect(log).toContain('sessions are stored on postgres');
    expect(log).not.toContain(s.url);
  });
});

describe('store.url_env: the URL comes from the environment only', () => {
  it('a missing variable or an unreachable server stops the start with the variable named, never the URL', async () => {
    const home = tempHome();
    writeConfig(home, STORE);
    const missing = await runCli(home, ['serve'], { env: { [VAR]: '' } });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain(`${VAR} (store.url_env) is not set`);

    const secret = 'hunter2-not-a-real-password';
    const unreachable = schemaUrl('nowhere', `postgres://gh:${secret}@127.0.0.1:1/test`);
    const refused = await runCli(home, ['serve'], { env: { [VAR]: unreachable } });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`cannot open the PostgreSQL store whose URL is in ${VAR}`);
    expect(refused.stderr + refused.stdout).not.toContain(secret);
  });

  it('status and doctor say which backend is in use; the config refuses url_env without postgres', async () => {
    const home = tempHome();
    writeConfig(home, STORE);
    const status = await runCli(home, ['status']);
    expect(status.stdout).toContain(`store:`);
    expect(status.stdout).toContain(`postgres (URL from $${VAR})`);
    const doctor = await runCli(home, ['doctor'], { env: { [VAR]: '' } });
    expect(doctor.stdout + doctor.stderr).toContain(`${VAR} is not set in this environment`);

    writeConfig(home, `store: {url_env: ${VAR}}`);
    const invalid = await runCli(home, ['status']);
    expect(invalid.stdout + invalid.stderr).toMatch(/store\.url_env.*only used with kind: postgres/);
  });
});
