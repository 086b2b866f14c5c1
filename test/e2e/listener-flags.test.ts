/**
 * `serve` / `start` --port and --host (issue 12 item 18): flags win over the config, a bad flag is
 * one line saying what to do, and the fixed default port gives way to a free one (with a note)
 * only when another process holds it.
 */
import { createServer, type AddressInfo, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PORT } from '../../src/daemon/config-listener.js';
import { exited, isOneLineError, requireBuild, runCli, spawnCli, tempHome, waitForOutput } from './cli.js';
import { writeConfig } from './gateway-harness.js';
import { unhandedPort } from '../shared/ports.js';

requireBuild();

/** Holds `port` on 127.0.0.1, or returns null when someone else already does (it is taken either way). */
async function hold(port: number): Promise<Server | null> {
  const blocker = createServer();
  return new Promise((resolve) => {
    blocker.once('error', () => resolve(null));
    blocker.listen(port, '127.0.0.1', () => resolve(blocker));
  });
}

/** Holds `port` once whoever has it now lets it go (other test files may start on the default port). */
async function holdSoon(port: number): Promise<Server> {
  const until = Date.now() + 60_000;
  for (;;) {
    const blocker = await hold(port);
    if (blocker) return blocker;
    if (Date.now() > until) throw new Error(`port ${port} stayed taken for a minute`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('listener flags', { timeout: 120_000 }, () => {
  it('serve --port/--host override listener.port/host in the config', async () => {
    const home = tempHome();
    writeConfig(home, `listener:\n  port: ${await unhandedPort()}\n`);
    const port = await unhandedPort();
    const serve = spawnCli(home, ['serve', '--port', String(port), '--host', '127.0.0.1']);
    const out = await waitForOutput(serve, 'Gatehouse is ready at');
    expect(out).toContain(`Gatehouse is ready at http://127.0.0.1:${port} `);
    expect(await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()).toMatchObject({ ok: true });
    serve.kill('SIGTERM');
    expect(await exited(serve)).toBe(0);
  });

  it('start --port passes the port to the daemon it spawns', async () => {
    const home = tempHome();
    const port = await unhandedPort();
    const start = await runCli(home, ['start', '--port', String(port)]);
    expect(start.code).toBe(0);
    expect(start.stdout).toContain(`Gatehouse is running at http://127.0.0.1:${port} `);
    expect((await runCli(home, ['stop'])).code).toBe(0);
  });

  it('refuses a remote --host without allow_remote, and a port that is not one, in one line', async () => {
    const home = tempHome();
    const remote = await runCli(home, ['serve', '--host', '0.0.0.0']);
    expect(remote.code).not.toBe(0);
    expect(isOneLineError(remote.stderr)).toBe(true);
    expect(remote.stderr).toContain('--host 0.0.0.0 is not a loopback address');
    const bad = await runCli(home, ['start', '--port', 'eighty']);
    expect(bad.code).not.toBe(0);
    expect(isOneLineError(bad.stderr)).toBe(true);
    expect(bad.stderr).toContain('--port must be a port number from 0 to 65535');
  });

  it(`the default port ${DEFAULT_PORT} gives way to a free one, with a note, when it is taken, and the gateway keeps that one`, async () => {
    // The test holds the port itself: a daemon of another file on the default port would let it go
    // at any moment, and the gateway under test would then rightly take it.
    let blocker: Server | null = await holdSoon(DEFAULT_PORT);
    try {
      const home = tempHome();
      const serve = spawnCli(home, ['serve']);
      let stderr = '';
      serve.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const out = await waitForOutput(serve, 'Gatehouse is ready at');
      expect(out).not.toContain(`:${DEFAULT_PORT} `);
      expect(stderr).toContain(`port ${DEFAULT_PORT} (the default) was taken`);
      const url = /Gatehouse is ready at (\S+)/.exec(out)![1]!;
      const chosen = Number(new URL(url).port);
      serve.kill('SIGTERM');
      expect(await exited(serve)).toBe(0);

      // Issue 31 item 6: the next start listens there again (the dashboard URL stays the same), even
      // when the default port is free by then...
      blocker?.close();
      blocker = null;
      const again = spawnCli(home, ['serve']);
      expect(await waitForOutput(again, 'Gatehouse is ready at')).toContain(`Gatehouse is ready at ${url} `);
      again.kill('SIGTERM');
      expect(await exited(again)).toBe(0);

      // ...and when that port is taken meanwhile, it refuses to move the URL and says what to do.
      blocker = await holdSoon(chosen);
      const refused = await runCli(home, ['serve']);
      expect(refused.code).not.toBe(0);
      expect(isOneLineError(refused.stderr)).toBe(true);
      expect(refused.stderr).toContain(`port ${chosen} is in use: the gateway took it when the default port`);
      expect(refused.stderr).toContain('listener-port to let the gateway choose again');
    } finally {
      blocker?.close();
    }
  });

  it('a port the owner chose is insisted on: taken is an error naming --port', async () => {
    const blocker = (await hold(await unhandedPort()))!;
    try {
      const { port } = blocker.address() as AddressInfo;
      const serve = await runCli(tempHome(), ['serve', '--port', String(port)]);
      expect(serve.code).not.toBe(0);
      expect(isOneLineError(serve.stderr)).toBe(true);
      expect(serve.stderr).toContain(`port ${port} is already in use`);
      expect(serve.stderr).toContain('--port');
    } finally {
      blocker.close();
    }
  });
});
