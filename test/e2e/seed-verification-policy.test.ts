/**
 * Seed verification, launch policy and secrets (issue 4, e2e cases 4 and 8): simultaneous sessions
 * of three surfaces each keep their own cwd, model and tool schemas; the api_key given at creation
 * reaches the model and nowhere else.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { toolRegistry } from '../../src/runtime/tools/registry.js';
import { BACKENDS, nextEvent } from './gateway-harness.js';
import { filesHolding, filesUnder, schemaDump } from './leaks.js';
import {
  chatRequests,
  createAttached,
  lastToolResult,
  runTurn,
  tempDir,
  toolNames,
  useFixture,
  type Snapshot,
} from './seed-fixture.js';

const fx = useFixture();

const namesOf = (toolsets: string[]) => toolRegistry.resolve(toolsets).map((t) => t.name);

describe.each(BACKENDS)('per-session policy and the api_key on %s', (store) => {
  beforeAll(() => {
    fx.store = store;
  });

  describe('LOC-4/LOC-6 three simultaneous surfaces keep their own policy', () => {
    it('cli, tui and gui turns meet at the model barrier and each sees its own cwd, model and tools', async () => {
      const d = await fx.daemon();
      const configBefore = readFileSync(d.layout.configFile);
      const surfaces = [
        { source: 'cli', tools: namesOf(['terminal', 'clarify']) },
        { source: 'tui', tools: namesOf(['terminal', 'clarify', 'project']) },
        { source: 'gui', tools: namesOf(['terminal', 'clarify', 'project', 'desktop_ui', 'catalog']) },
      ].map((s) => ({ ...s, cwd: tempDir(`gh-${s.source}-`), model: `model-${s.source}` }));
      expect(surfaces[0]!.tools).toEqual(['terminal', 'clarify']);
      expect(surfaces[2]!.tools).toEqual(
        expect.arrayContaining(['read_file', 'show_notice', 'list_toolsets']),
      );

      const clients = await Promise.all(surfaces.map(() => d.connect()));
      const ids = await Promise.all(
        surfaces.map((s, i) =>
          // yolo: this test is about surfaces meeting, not approvals (the command writes out.txt).
          createAttached(clients[i]!, { source: s.source, cwd: s.cwd, model: s.model, yolo: true }),
        ),
      );
      const infoBefore = await Promise.all(
        ids.map((id, i) => clients[i]!.call('session.info', { session_id: id })),
      );

      fx.demo.hold();
      const turns = surfaces.map((s, i) =>
        runTurn(clients[i]!, ids[i]!, 'go', `run: echo ${s.source} > out.txt && pwd`),
      );
      await fx.demo.waitForRequests(3);
      const held = chatRequests(fx.demo);
      expect(held.map((r) => r.model).sort()).toEqual(['model-cli', 'model-gui', 'model-tui']);
      fx.demo.release();
      const done = await Promise.all(turns);
      expect(done.map((e) => e.event['outcome'])).toEqual(['completed', 'completed', 'completed']);

      const requests = chatRequests(fx.demo);
      expect(requests).toHaveLength(6);
      for (const s of surfaces) {
        const mine = requests.filter((r) => r.model === s.model);
        expect(mine).toHaveLength(2);
        for (const r of mine) expect(toolNames(r)).toEqual(s.tools);
        expect(lastToolResult(mine[1]!)).toContain(s.cwd);
        for (const other of surfaces.filter((o) => o !== s)) {
          expect(lastToolResult(mine[1]!)).not.toContain(other.cwd);
        }
        expect(readFileSync(join(s.cwd, 'out.txt'), 'utf8')).toBe(`${s.source}\n`);
      }

      await Promise.all(clients.map((c) => c.close()));
      for (const [i, s] of surfaces.entries()) {
        const viewer = await d.connect();
        const snapshot = await viewer.call<Snapshot>('session.resume', { session_id: ids[i] });
        expect(snapshot.info).toMatchObject({ source: s.source, model: s.model, cwd: s.cwd, agent: 'live' });
        // The title is the only field a first message changes: an untitled session is titled from it.
        const { agent: _a, title: _t, ...stable } = infoBefore[i]!;
        expect(snapshot.info).toMatchObject(stable);
        expect(snapshot.info.title).toBe(`run: echo ${s.source} > out.txt && pwd`);
        const next = nextEvent(viewer, 'turn.complete');
        await viewer.call('prompt.submit', { session_id: ids[i], submission_id: 'again', text: 'run: pwd' });
        expect((await next).event).toMatchObject({ outcome: 'completed' });
        const last = chatRequests(fx.demo).at(-1)!;
        expect(last.model).toBe(s.model);
        expect(toolNames(last)).toEqual(s.tools);
        expect(lastToolResult(last)).toContain(s.cwd);
      }
      expect(readFileSync(d.layout.configFile)).toEqual(configBefore);
    });
  });

  describe('LOC-5 the creation api_key never reaches disk or logs', () => {
    it('is used for the model call but appears in no file under the home and in no output line', async () => {
      const d = await fx.daemon();
      let output = '';
      d.child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      d.child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const apiKey = `sk-e2e-${randomBytes(16).toString('hex')}`;
      const client = await d.connect();
      const cwd = tempDir();
      const session_id = await createAttached(client, { request_id: 'keyed', cwd, api_key: apiKey });
      const refused = await client
        .call('session.create', { cwd: 'relative/dir', api_key: apiKey })
        .catch((e: unknown) => e);
      expect(refused).toMatchObject({ reason: 'invalid_params' });
      expect(JSON.stringify(refused)).not.toContain(apiKey);
      const done = await runTurn(client, session_id, 'k', 'run: echo key-turn');
      expect(done.event).toMatchObject({ outcome: 'completed' });
      const used = fx.demo.requests.filter((r) => r.path === '/v1/chat/completions');
      expect(used.length).toBeGreaterThan(0);
      for (const r of used) expect(r.headers['authorization']).toBe(`Bearer ${apiKey}`);

      const files = filesUnder(d.home);
      // Where the rows live: the database files under the home on sqlite, the schema on postgres.
      if (store === 'sqlite') expect(files.some((f) => f.endsWith('state.db-wal'))).toBe(true);
      expect(files.some((f) => f.endsWith('gateway.log') && statSync(f).size > 0)).toBe(true);
      expect(filesHolding(d.home, apiKey)).toEqual([]);

      expect(await d.stop()).toBe(0);
      fx.forget(d);
      expect(filesHolding(d.home, apiKey)).toEqual([]);
      const dump = schemaDump(d.home);
      expect(dump === null).toBe(store === 'sqlite');
      if (dump === null) expect(filesHolding(d.home, 'key-turn').length).toBeGreaterThan(0);
      else {
        expect(dump).toContain('key-turn');
        expect(dump).not.toContain(apiKey);
      }
      expect(output).not.toContain(apiKey);
    });
  });

  describe('LOC-5 the api_key stays private even when the provider echoes it', () => {
    it('a 401 quoting the key fails the turn without the key reaching disk, logs or clients', async () => {
      const apiKey = `sk-echo-${randomBytes(16).toString('hex')}`;
      const provider = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          const offered = String(req.headers['authorization'] ?? '');
          res.writeHead(401, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${offered}` } }));
        });
      });
      provider.listen(0, '127.0.0.1');
      await once(provider, 'listening');
      try {
        const { port } = provider.address() as AddressInfo;
        const d = await fx.daemon();
        let output = '';
        d.child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
        d.child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
        const client = await d.connect();
        const heard: unknown[] = [];
        client.onNotification((n) => heard.push(n));
        const session_id = await createAttached(client, {
          cwd: tempDir(),
          base_url: `http://127.0.0.1:${port}/v1`,
          api_key: apiKey,
        });
        const done = await runTurn(client, session_id, 'x', 'hello');
        expect(done.event).toMatchObject({ outcome: 'failed' });
        expect(JSON.stringify(done.event)).toContain('redacted');
        const snapshot = await client.call('session.resume', { session_id });
        expect(JSON.stringify([heard, snapshot])).not.toContain(apiKey);
        expect(await d.stop()).toBe(0);
        fx.forget(d);
        expect(filesHolding(d.home, apiKey)).toEqual([]);
        expect(schemaDump(d.home) ?? '').not.toContain(apiKey); // postgres: no row either
        expect(output).not.toContain(apiKey);
      } finally {
        provider.close();
      }
    });
  });
});
