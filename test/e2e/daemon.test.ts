import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import {
  exited,
  finished,
  isOneLineError,
  requireBuild,
  runCli,
  spawnCli,
  tempHome,
  waitForOutput,
} from './cli.js';

beforeAll(requireBuild);

function writeConfig(home: string, text: string): string {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const file = join(home, 'config.yaml');
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

function readJson(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

describe('UX-1 gatehouse serve', () => {
  it('advertises a working URL, refuses a second daemon, and exits 0 after SIGTERM with its files removed', async () => {
    const home = tempHome();
    const layout = homeLayout(home);
    const serve = spawnCli(home, ['serve']);
    await waitForOutput(serve, 'Gatehouse is ready at');

    const info = readJson(layout.gatewayJson);
    expect(info['pid']).toBe(serve.pid);
    expect(typeof info['instance_id']).toBe('string');
    expect(typeof info['epoch']).toBe('number');
    const response = await fetch(`${String(info['url'])}/healthz`);
    expect(await response.json()).toMatchObject({ ok: true, state: 'ready' });

    const second = await runCli(home, ['serve']);
    expect(second.code).not.toBe(0);
    expect(isOneLineError(second.stderr)).toBe(true);
    expect(second.stderr).toContain(`already running on ${home} (pid ${serve.pid})`);
    expect(readJson(layout.gatewayJson)['pid']).toBe(serve.pid); // the first daemon is untouched

    serve.kill('SIGTERM');
    expect(await exited(serve)).toBe(0);
    expect(readdirSync(layout.runDir)).toEqual([]);
  });

  it('reports a port in use in one line naming the key and the file (serve and start)', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const home = tempHome();
      const file = writeConfig(home, `listener:\n  port: ${port}\n`);
      const serve = await runCli(home, ['serve']);
      expect(serve.code).not.toBe(0);
      expect(isOneLineError(serve.stderr)).toBe(true);
      expect(serve.stderr).toContain(
        `port ${port} is already in use: choose another listener.port in ${file}`,
      );

      const start = await runCli(home, ['start']);
      expect(start.code).not.toBe(0);
      expect(isOneLineError(start.stderr)).toBe(true);
      expect(start.stderr).toContain(`port ${port} is already in use`);
      expect(readdirSync(homeLayout(home).runDir)).toEqual([]);
    } finally {
      blocker.close();
    }
  });

  it('refuses a bad config in one line naming the file and the key path', async () => {
    const home = tempHome();
    const file = writeConfig(home, 'listener:\n  port: lots\n');
    const serve = await runCli(home, ['serve']);
    expect(serve.code).not.toBe(0);
    expect(isOneLineError(serve.stderr)).toBe(true);
    expect(serve.stderr).toContain(`${file}: listener.port:`);
  });
});

describe('UX-1 gatehouse start / status / stop', () => {
  it('starts in the background, reports running with its pid, stops, then reports not running', async () => {
    const home = tempHome();
    const start = await runCli(home, ['start']);
    expect(start.code).toBe(0);
    expect(start.stdout).toMatch(/Gatehouse is running at http:\/\/127\.0\.0\.1:\d+/);

    const running = await runCli(home, ['status', '--json']);
    expect(running.code).toBe(0);
    const report = JSON.parse(running.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({ running: true, state: 'running', home });
    expect(report['pid']).toBe(readJson(homeLayout(home).gatewayJson)['pid']);
    // The daemon runs with the allocator settings that keep its RSS flat (docs/daemon.md).
    const environ = readFileSync(`/proc/${String(report['pid'])}/environ`, 'utf8').split('\0');
    expect(environ).toContain('MALLOC_MMAP_THRESHOLD_=262144');
    expect(environ).toContain('MALLOC_TRIM_THRESHOLD_=4194304');
    expect(report['model']).toBe('built-in demo model (scripted stand-in, no account needed)');
    expect((await fetch(`${String(report['url'])}/healthz`)).ok).toBe(true);

    const again = await runCli(home, ['start']);
    expect(again.stdout).toContain(`already running at ${String(report['url'])}`);

    const stop = await runCli(home, ['stop']);
    expect(stop.code).toBe(0);
    expect(stop.stdout).toContain(`Gatehouse stopped (pid ${String(report['pid'])})`);

    const stopped = await runCli(home, ['status']);
    expect(stopped.code).toBe(0);
    expect(stopped.stdout).toContain('Gatehouse is not running');
    const json = JSON.parse((await runCli(home, ['status', '--json'])).stdout) as Record<string, unknown>;
    expect(json).toMatchObject({ running: false, pid: null, url: null });

    const stopAgain = await runCli(home, ['stop']);
    expect(stopAgain.code).toBe(0);
    expect(stopAgain.stdout).toContain('not running');
    // Eight CLI processes one after another: 30 s ran out on a machine loaded by torture runs.
  }, 90_000);
});

describe('UX-3 secrets stay out of logs and output', () => {
  it('a configured API key (inline or from the environment) reaches neither the log nor `config`', async () => {
    const home = tempHome();
    const inline = 'sk-inline-e2e-SECRET-1111';
    const fromEnv = 'sk-env-e2e-SECRET-2222';
    writeConfig(
      home,
      `model:\n  base_url: https://models.example.test/v1\n  model: m-1\n  api_key: ${inline}\n  api_key_env: GH_E2E_KEY\n`,
    );
    const env = { GH_E2E_KEY: fromEnv };
    const serve = spawnCli(home, ['serve'], env);
    const output = finished(serve);
    await waitForOutput(serve, 'Gatehouse is ready at');
    serve.kill('SIGTERM');
    const run = await output;
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('model.api_key is written inline'); // warned, not printed

    const log = readFileSync(homeLayout(home).logFile, 'utf8');
    expect(log).toContain('gateway starting');
    expect(log).not.toContain(inline);
    expect(log).not.toContain(fromEnv);
    expect(run.stdout + run.stderr).not.toContain(inline);

    for (const args of [['config'], ['config', '--json']]) {
      const shown = await runCli(home, args, { env });
      expect(shown.code).toBe(0);
      expect(shown.stdout).toContain('GH_E2E_KEY');
      expect(shown.stdout).toContain('***');
      expect(shown.stdout).not.toContain(inline);
    }
  });

  it('passwd stores only a hash, keeps the rest of the file, and config masks it', async () => {
    const home = tempHome();
    const file = writeConfig(home, '# my own notes\napprovals:\n  timeout_s: 42 # keep me\n');
    const password = 'correct horse battery staple';
    const passwd = await runCli(home, ['passwd'], { input: `${password}\n` });
    expect(passwd.code).toBe(0);

    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(password);
    expect(text).toMatch(/password_hash: scrypt\$/);
    expect(text).toContain('# my own notes');
    expect(text).toContain('timeout_s: 42 # keep me');

    const shown = await runCli(home, ['config', '--json']);
    const config = JSON.parse(shown.stdout) as { dashboard: { password_hash: string }; approvals: object };
    expect(config.dashboard.password_hash).toBe('***');
    expect(config.approvals).toMatchObject({ timeout_s: 42 });

    const empty = await runCli(home, ['passwd'], { input: '\n' });
    expect(empty.code).not.toBe(0);
    expect(isOneLineError(empty.stderr)).toBe(true);
  });

  it('ticket without a running gateway says so in one line', async () => {
    const run = await runCli(tempHome(), ['ticket']);
    expect(run.code).not.toBe(0);
    expect(isOneLineError(run.stderr)).toBe(true);
    expect(run.stderr).toContain('gatehouse start');
  });
});

describe('UX-1 after a crash', () => {
  it('a SIGKILLed daemon is reported as not running, and the next serve takes over its home', async () => {
    const home = tempHome();
    const first = spawnCli(home, ['serve']);
    await waitForOutput(first, 'Gatehouse is ready at');
    first.kill('SIGKILL');
    await exited(first);

    const status = JSON.parse((await runCli(home, ['status', '--json'])).stdout) as Record<string, unknown>;
    expect(status).toMatchObject({ running: false, stale_pid: first.pid });

    const second = spawnCli(home, ['serve']);
    await waitForOutput(second, 'Gatehouse is ready at');
    expect(readJson(homeLayout(home).gatewayJson)['pid']).toBe(second.pid);
    second.kill('SIGTERM');
    expect(await exited(second)).toBe(0);
  });
});
