/**
 * Issue 26 item 12: the model is checked before the first message. `gatehouse doctor` asks each
 * configured provider for `GET /models` with its key, in bounded time, and names the key's variable;
 * `gatehouse start` with an unset key variable warns at once; a turn the provider refuses with 401
 * names the variable to check.
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { unhandedPort } from '../shared/ports.js';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { requireBuild, runCli, tempHome } from './cli.js';
import { nextEvent, startDaemon, writeConfig, type RunningDaemon } from './gateway-harness.js';
import { createAttached, tempDir } from './seed-fixture.js';

interface Doctor {
  ok: boolean;
  checks: { name: string; ok: boolean; detail: string; fix?: string }[];
}

const KEY_VAR = 'GH_DOCTOR_TEST_KEY';
const servers: http.Server[] = [];
const demos: DemoModelServer[] = [];
const daemons: RunningDaemon[] = [];
const homes: string[] = [];
beforeAll(requireBuild);
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
  await Promise.all(homes.splice(0).map((home) => runCli(home, ['stop'])));
  await Promise.all(demos.splice(0).map((d) => d.close()));
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

/** A provider that refuses every key, as a real one does a wrong key. */
async function refusingProvider(): Promise<string> {
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } }),
    );
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

/** A port nothing listens on, and that no listen(0) beside this file can be given meanwhile. */
const closedPort = unhandedPort;

function modelConfig(baseUrl: string): string {
  return ['model:', `  base_url: ${baseUrl}`, '  model: m1', `  api_key_env: ${KEY_VAR}`, ''].join('\n');
}

async function modelCheck(home: string, env: NodeJS.ProcessEnv) {
  const run = await runCli(home, ['doctor', '--json'], { env });
  const report = JSON.parse(run.stdout) as Doctor;
  return { code: run.code, check: report.checks.find((c) => c.name === 'model default')! };
}

describe('gatehouse doctor reaches the model', { timeout: 120_000 }, () => {
  it('passes with a reachable model and its key, and fails naming the variable when it is unset', async () => {
    const demo = await startDemoModel();
    demos.push(demo);
    const home = tempHome();
    writeConfig(home, modelConfig(demo.baseUrl));

    const good = await modelCheck(home, { [KEY_VAR]: 'sk-doctor-test-1234' });
    expect(good.check).toMatchObject({
      ok: true,
      detail: `${demo.baseUrl}/models answers (HTTP 200); the key is the variable ${KEY_VAR} (model.api_key_env)`,
    });
    const asked = demo.requests.find((r) => r.path === '/v1/models')!;
    expect(asked.headers.authorization).toBe('Bearer sk-doctor-test-1234');

    const unset = await modelCheck(home, { [KEY_VAR]: '' });
    expect(unset.code).toBe(1);
    expect(unset.check.ok).toBe(false);
    expect(unset.check.detail).toContain(`the variable ${KEY_VAR} (model.api_key_env), which is not set`);
    expect(unset.check.fix).toBe(`export ${KEY_VAR}=<the key> where the gateway starts`);
  });

  it('fails on an unreachable base_url and on a refused key, naming what to fix', async () => {
    const home = tempHome();
    const port = await closedPort();
    writeConfig(home, modelConfig(`http://127.0.0.1:${port}/v1`));
    const unreachable = await modelCheck(home, { [KEY_VAR]: 'sk-doctor-test-1234' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.check.ok).toBe(false);
    expect(unreachable.check.detail).toContain(`http://127.0.0.1:${port}/v1/models cannot be reached`);
    expect(unreachable.check.fix).toContain('check base_url');

    const refusing = await refusingProvider();
    writeConfig(home, modelConfig(refusing));
    const refused = await modelCheck(home, { [KEY_VAR]: 'sk-doctor-test-1234' });
    expect(refused.check.ok).toBe(false);
    expect(refused.check.detail).toBe(
      `${refusing}/models refused the key (HTTP 401); the key is the variable ${KEY_VAR} (model.api_key_env)`,
    );
    expect(JSON.stringify(refused)).not.toContain('sk-doctor-test-1234');
  });
});

describe('an unset or refused key is named', { timeout: 120_000 }, () => {
  it('gatehouse start warns at once when the key variable is unset', async () => {
    const demo = await startDemoModel();
    demos.push(demo);
    const home = tempHome();
    homes.push(home);
    writeConfig(home, modelConfig(demo.baseUrl));
    const started = await runCli(home, ['start', '--port', '0'], { env: { [KEY_VAR]: '' } });
    expect(started.code).toBe(0);
    expect(started.stderr).toContain(
      `gatehouse: note: model.api_key_env names ${KEY_VAR}, which is not set in this environment`,
    );
  });

  it('a turn the provider refuses with 401 names the variable to check', async () => {
    const refusing = await refusingProvider();
    const daemon = await startDaemon({
      config: modelConfig(refusing),
      env: { [KEY_VAR]: 'sk-doctor-test-1234' },
    });
    daemons.push(daemon);
    const client = await daemon.connect();
    const session_id = await createAttached(client, { cwd: tempDir() });
    const done = nextEvent(client, 'turn.complete');
    await client.call('prompt.submit', { session_id, submission_id: 'k1', text: 'hello?' });
    const event = (await done).event as unknown as {
      outcome: string;
      error: { reason: string; message: string };
    };
    expect(event).toMatchObject({ outcome: 'failed', error: { reason: 'auth' } });
    expect(event.error.message).toContain(`Check the variable ${KEY_VAR} (model.api_key_env).`);
    expect(event.error.message).not.toContain('sk-doctor-test-1234');
  });
});
