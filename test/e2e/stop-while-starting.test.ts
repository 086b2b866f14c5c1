/**
 * A chat platform whose API accepts the connection and never answers: the daemon is ready all the
 * same (the platform connects in the background), and SIGTERM (Ctrl-C on a foreground `gatehouse
 * serve`) ends it without waiting for an answer that does not come: exit code 0, no run files left.
 * (Before, the platform's start kept the daemon starting, and only drain_timeout_s ended it.)
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import { finished, requireBuild, spawnCli, tempHome, waitForOutput } from './cli.js';

/** A TCP server that accepts every connection and never answers on it. */
let blackHole: Server;
const held: Socket[] = [];

beforeAll(async () => {
  requireBuild();
  blackHole = createServer((socket) => void held.push(socket));
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  for (const socket of held) socket.destroy();
  await new Promise((resolve) => blackHole.close(resolve));
});

describe('a stop while a service is still starting', () => {
  it('the daemon is ready, and SIGTERM ends it without waiting for the API, run files removed', async () => {
    const { port } = blackHole.address() as { port: number };
    const home = tempHome();
    mkdirSync(home, { recursive: true, mode: 0o700 });
    writeFileSync(
      join(home, 'config.yaml'),
      [
        'drain_timeout_s: 600',
        'listener: {port: 0}',
        'platforms:',
        '  telegram:',
        '    enabled: true',
        '    token_env: GH_STOP_TG_TOKEN',
        `    api_root: http://127.0.0.1:${port}`,
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    const child = spawnCli(home, ['serve', '--log-stderr'], {
      GH_STOP_TG_TOKEN: '123456:stop-while-starting',
    });
    const run = finished(child);
    // The daemon is ready while the chat platform's start waits on the silent API.
    const gatewayUp = waitForOutput(child, 'is ready');
    const platformWaiting =
      held.length > 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => blackHole.once('connection', () => resolve()));
    await Promise.all([gatewayUp, platformWaiting]);
    child.kill('SIGTERM');
    const result = await run;
    // drain_timeout_s is 600: an exit before it did not wait for the silent API.
    expect(result.code).toBe(0);
    const layout = homeLayout(home);
    expect(existsSync(layout.pidFile)).toBe(false);
    expect(existsSync(layout.gatewayJson)).toBe(false);
  }, 60_000);
});
