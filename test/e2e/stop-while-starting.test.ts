/**
 * A stop asked for while a service is still starting: a chat platform whose API accepts the
 * connection and never answers keeps the daemon starting, and SIGTERM (Ctrl-C on a foreground
 * `gatehouse serve`) must still end it — after `drain_timeout_s`, with exit code 1 and no run files
 * left — instead of waiting for a start that does not end.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import { finished, requireBuild, spawnCli, tempHome } from './cli.js';

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
  it('SIGTERM ends the daemon after drain_timeout_s, exit code 1, run files removed', async () => {
    const { port } = blackHole.address() as { port: number };
    const home = tempHome();
    mkdirSync(home, { recursive: true, mode: 0o700 });
    writeFileSync(
      join(home, 'config.yaml'),
      [
        'drain_timeout_s: 1',
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
    // The local gateway is up; the chat platform's start waits on the silent API.
    const gatewayUp = new Promise<void>((resolve, reject) => {
      let seen = '';
      child.stderr!.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes('"service":"gateway","msg":"service started"')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`exited with ${code} while starting: ${seen}`)));
    });
    const platformWaiting =
      held.length > 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => blackHole.once('connection', () => resolve()));
    await Promise.all([gatewayUp, platformWaiting]);
    child.kill('SIGTERM');
    const result = await run;
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('stop requested while starting, and a service is still starting');
    expect(result.stdout).not.toContain('is ready');
    const layout = homeLayout(home);
    expect(existsSync(layout.pidFile)).toBe(false);
    expect(existsSync(layout.gatewayJson)).toBe(false);
  }, 60_000);
});
