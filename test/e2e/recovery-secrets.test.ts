import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_PAGE_COUNT_ENV } from '../../src/storage/sqlite/database.js';
import { BACKENDS, nextEvent } from './gateway-harness.js';
import { filesHolding, schemaDump } from './leaks.js';
import { modelConfig, quiet, tempDir, useRecoveryRig, type Ack, type Snapshot } from './recovery-harness.js';

const rig = useRecoveryRig();

describe.each(BACKENDS)('LOC-5 an api_key lives only in memory on %s', (store) => {
  beforeAll(() => {
    rig.store = store;
  });

  it('is gone after a restart (launch_credentials_unavailable), comes back with a repeated session.create, and never touches disk', async () => {
    const demo = await rig.model();
    const config = modelConfig(demo);
    const apiKey = 'sk-gatehouse-test-SECRET-7f3a9c';
    const params = { request_id: 'keyed', cwd: tempDir(), api_key: apiKey };
    let d = await rig.daemon({ config });
    let client = await d.connect();
    const { session_id } = await client.call<Snapshot>('session.create', params);
    await client.call('prompt.submit', { session_id, submission_id: 'k1', text: 'with key' });
    await quiet(client, session_id);
    expect(demo.requests.at(-1)!.headers['authorization']).toBe(`Bearer ${apiKey}`);
    await d.kill();

    d = await rig.daemon({ home: d.home, config });
    client = await d.connect();
    await client.call('session.resume', { session_id });
    const failed = nextEvent(client, 'turn.complete');
    const seen = demo.requests.length;
    await client.call('prompt.submit', { session_id, submission_id: 'k2', text: 'no key now' });
    expect((await failed).event).toMatchObject({
      outcome: 'failed',
      error: { reason: 'launch_credentials_unavailable' },
    });
    expect(demo.requests.length).toBe(seen);

    // The documented path: repeat the creation with the same request_id and the key.
    const again = await client.call<Snapshot>('session.create', params);
    expect(again.session_id).toBe(session_id);
    const worked = nextEvent(client, 'turn.complete');
    await client.call('prompt.submit', { session_id, submission_id: 'k3', text: 'key is back' });
    expect((await worked).event).toMatchObject({ outcome: 'completed' });
    expect(demo.requests.at(-1)!.headers['authorization']).toBe(`Bearer ${apiKey}`);
    expect(await d.stop()).toBe(0);

    expect(filesHolding(d.home, apiKey)).toEqual([]);
    // On postgres, every row of the schema too.
    const dump = schemaDump(d.home);
    expect(dump === null).toBe(store === 'sqlite');
    if (dump !== null) {
      expect(dump).toContain('with key');
      expect(dump).not.toContain(apiKey);
    }
  });
});

// SQLite only: its page-count cap stands in for a full disk; PostgreSQL's is the server's own.
describe('STO-5 disk full', () => {
  beforeAll(() => {
    rig.store = 'sqlite'; // the describe.each blocks above leave the rig on their last backend
  });

  it('answers storage_unavailable and loses nothing acknowledged before', async () => {
    const demo = await rig.model();
    const config = modelConfig(demo);
    let d = await rig.daemon({ config });
    let client = await d.connect();
    const { session_id } = await client.call<Snapshot>('session.create', {
      request_id: 'full',
      cwd: tempDir(),
    });
    const before: Ack[] = [];
    for (const n of [1, 2, 3])
      before.push(
        await client.call<Ack>('prompt.submit', { session_id, submission_id: `b${n}`, text: `before ${n}` }),
      );
    await quiet(client, session_id);
    expect(await d.stop()).toBe(0);

    const db = new Database(d.layout.stateDb('default'), { readonly: true });
    const pages = db.pragma('page_count', { simple: true }) as number;
    db.close();
    // A few pages of room: the start fits, a large input does not.
    d = await rig.daemon({ home: d.home, config, env: { [MAX_PAGE_COUNT_ENV]: String(pages + 4) } });
    client = await d.connect();
    const big = 'x'.repeat(400_000);
    const refused = await client
      .call('prompt.submit', { session_id, submission_id: 'big', text: big })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ reason: 'storage_unavailable' });
    const snap = await client.call<Snapshot>('session.resume', { session_id });
    expect(snap.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'before 1',
      'before 2',
      'before 3',
    ]);
    expect(snap.pending_admissions).toEqual([]);
    const log = readFileSync(join(d.layout.root, 'logs', 'gateway.log'), 'utf8');
    expect(log).toContain('SQLITE_FULL');
    await d.kill();

    // With room again, everything acknowledged is there and the refused input was never admitted.
    d = await rig.daemon({ home: d.home, config });
    client = await d.connect();
    const retry = await client.call<Ack>('prompt.submit', { session_id, submission_id: 'big', text: big });
    expect(retry.duplicate).toBe(false);
    const done = await quiet(client, session_id);
    expect(done.messages.filter((m) => m.role === 'user')).toHaveLength(4);
    for (const b of before) expect(done.messages.some((m) => m.admission_id === b.admission_id)).toBe(true);
  });
});
