import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/daemon/config.js';
import { runDaemon, type DaemonContext, type DaemonService } from '../../../src/daemon/daemon.js';
import { DaemonError } from '../../../src/daemon/errors.js';
import { homeLayout, initHome } from '../../../src/daemon/home.js';
import { createLogger } from '../../../src/daemon/logger.js';
import { acquirePidFile, processStartTime, removeQuietly, runningPid } from '../../../src/daemon/pidfile.js';

function setup(configText = '') {
  const layout = homeLayout(join(mkdtempSync(join(tmpdir(), 'gh-daemon-')), 'home'));
  const { config } = parseConfig(configText, layout.configFile);
  const logger = createLogger({ file: layout.logFile });
  return { layout, config, configFile: layout.configFile, logger };
}

/** A service that records what happens to it; `drainUntil` holds its drain like a running turn. */
function recorder(name: string, log: string[], behaviour: Partial<DaemonService> = {}): DaemonService {
  return {
    name,
    start: behaviour.start ?? (() => Promise.resolve(void log.push(`start ${name}`))),
    drain: behaviour.drain ?? (() => Promise.resolve(void log.push(`drain ${name}`))),
    stop: behaviour.stop ?? (() => Promise.resolve(void log.push(`stop ${name}`))),
  };
}

describe('daemon home (issue 4)', () => {
  it('is created owner-only with a default config, never overwritten', () => {
    const layout = homeLayout(join(mkdtempSync(join(tmpdir(), 'gh-home-')), 'home'));
    expect(initHome(layout).createdConfig).toBe(true);
    expect(statSync(layout.root).mode & 0o777).toBe(0o700);
    expect(statSync(layout.configFile).mode & 0o777).toBe(0o600);
    expect(initHome(layout).createdConfig).toBe(false);
    expect(layout.stateDb('work')).toBe(join(layout.root, 'profiles', 'work', 'state.db'));
  });
});

describe('daemon services and lifecycle (issue 4)', () => {
  it('rewrites gateway.json when a running service advertises a new adapter state', async () => {
    const env = setup();
    let context: DaemonContext | undefined;
    const platform = recorder('platform', [], {
      start: (ctx: DaemonContext) => {
        context = ctx;
        ctx.advertise({ adapters: [{ platform: 'telegram', state: 'running', detail: null }] });
        return Promise.resolve();
      },
    });
    const handle = await runDaemon({ ...env, services: [platform] });
    const read = () => JSON.parse(readFileSync(env.layout.gatewayJson, 'utf8')) as { adapters: unknown[] };
    expect(read().adapters).toEqual([{ platform: 'telegram', state: 'running', detail: null }]);
    context!.advertise({ adapters: [{ platform: 'telegram', state: 'failed', detail: 'Unauthorized' }] });
    expect(read().adapters).toEqual([{ platform: 'telegram', state: 'failed', detail: 'Unauthorized' }]);
    expect(await handle.shutdown('test')).toBe(0);
    expect(existsSync(env.layout.gatewayJson)).toBe(false);
  });

  it('starts services in order, advertises them in gateway.json, drains and stops in reverse', async () => {
    const env = setup();
    const log: string[] = [];
    const advertiser = recorder('listener', log, {
      start: (ctx: DaemonContext) => {
        log.push('start listener');
        ctx.advertise({ url: 'http://127.0.0.1:1234', epoch: 7 });
        return Promise.resolve();
      },
    });
    const handle = await runDaemon({ ...env, services: [recorder('store', log), advertiser] });
    expect(handle.lifecycle.state).toBe('ready');
    expect(handle.lifecycle.accepting()).toBe(true);
    const info = JSON.parse(readFileSync(env.layout.gatewayJson, 'utf8')) as Record<string, unknown>;
    expect(info).toMatchObject({ pid: process.pid, url: 'http://127.0.0.1:1234', epoch: 7 });
    expect(info['instance_id']).toBe(handle.info.instance_id);
    expect(readFileSync(env.layout.pidFile, 'utf8').split(' ')[0]).toBe(String(process.pid));

    expect(await handle.shutdown('test')).toBe(0);
    expect(handle.lifecycle.state).toBe('stopped');
    expect(log).toEqual([
      'start store',
      'start listener',
      'drain listener',
      'drain store',
      'stop listener',
      'stop store',
    ]);
    expect(existsSync(env.layout.gatewayJson)).toBe(false);
    expect(existsSync(env.layout.pidFile)).toBe(false);
  });

  it('refuses new input while draining and waits for running work', async () => {
    const env = setup();
    let finishTurn!: () => void;
    const turnDone = new Promise<void>((resolve) => (finishTurn = resolve));
    const runtime = recorder('runtime', [], { drain: () => turnDone });
    const handle = await runDaemon({ ...env, services: [runtime] });
    const draining = handle.lifecycle.reached('draining');
    const stopping = handle.shutdown('SIGTERM');
    await draining;
    expect(handle.lifecycle.accepting()).toBe(false);
    expect(existsSync(env.layout.gatewayJson)).toBe(true); // still reachable to answer runtime_draining
    finishTurn();
    expect(await stopping).toBe(0);
  });

  it('stops at the drain deadline even if work never finishes', async () => {
    const env = setup('drain_timeout_s: 0');
    const stuck = recorder('stuck', [], { drain: () => new Promise<void>(() => {}) });
    const handle = await runDaemon({ ...env, services: [stuck] });
    expect(await handle.shutdown('SIGTERM')).toBe(0);
    expect(handle.lifecycle.state).toBe('stopped');
  });

  it('a second shutdown call skips the rest of the drain', async () => {
    const env = setup();
    const stuck = recorder('stuck', [], { drain: () => new Promise<void>(() => {}) });
    const handle = await runDaemon({ ...env, services: [stuck] });
    const first = handle.shutdown('SIGTERM');
    await handle.lifecycle.reached('draining');
    expect(await handle.shutdown('SIGINT')).toBe(0);
    expect(await first).toBe(0);
  });

  it('REC-6: a signal that arrives after the stop, before the process exits, leaves exit code 0', async () => {
    // The CLI's handlers used to be removed once the services had stopped, before process.exit:
    // a second SIGTERM in that window (a test's or supervisor's stop sent while the first drained)
    // met the default action, and a clean drain ended as a death by signal.
    const child = join(import.meta.dirname, 'late-signal-child.ts');
    const run = promisify(execFile)(process.execPath, ['--import', 'tsx', child], {
      cwd: join(import.meta.dirname, '../../..'),
    });
    const { stdout } = await run.catch((error: { signal?: string; code?: number }) => {
      throw new Error(`the stopped daemon's process ended by ${error.signal ?? `exit ${error.code}`}`);
    });
    expect(stdout).toBe('stopped 0\n');
  }, 60_000);

  it('rolls back started services when one fails, keeping its one-line error', async () => {
    const env = setup();
    const log: string[] = [];
    const failing = recorder('listener', log, {
      start: () =>
        Promise.reject(new DaemonError('port_in_use', 'port 8123 is already in use: choose another')),
    });
    const broken = recorder('plugin', log, { start: () => Promise.reject(new Error('bad\nstack')) });

    await expect(runDaemon({ ...env, services: [recorder('store', log), failing] })).rejects.toMatchObject({
      code: 'port_in_use',
      message: 'port 8123 is already in use: choose another',
    });
    expect(log).toEqual(['start store', 'stop store']);
    expect(existsSync(env.layout.pidFile)).toBe(false);
    expect(existsSync(env.layout.gatewayJson)).toBe(false);

    await expect(runDaemon({ ...env, services: [broken] })).rejects.toMatchObject({
      code: 'service_failed',
      message: 'plugin failed to start: bad',
    });
  });
});

describe('daemon pid file (issue 4): one daemon per home, crashes leave no lock', () => {
  it('a live holder refuses a second daemon; a dead or reused pid is stale and replaced', () => {
    const { layout } = setup();
    initHome(layout);
    const holder = process.ppid; // alive for the whole test
    writeFileSync(layout.pidFile, `${holder} ${processStartTime(holder) ?? ''}\n`);
    expect(runningPid(layout)).toBe(holder);
    expect(() => acquirePidFile(layout)).toThrow(
      /already running .* \(pid \d+\): stop it with "gatehouse stop"/,
    );

    writeFileSync(layout.pidFile, `${holder} 1\n`); // same pid, another process's start time
    expect(runningPid(layout)).toBeUndefined();
    acquirePidFile(layout);
    expect(runningPid(layout)).toBe(process.pid);
    removeQuietly(layout.pidFile);
  });
});
