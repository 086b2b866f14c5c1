/**
 * Messages that leave nobody stuck (issue 12 item 17): `gatehouse backup` and `gatehouse doctor`
 * exactly as docs/daemon.md shows them, a damaged database that says what to do, a home on /proc
 * that fails at once, a home too long for a Unix socket path, and the pid file docs/daemon.md
 * describes.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import { processStartTime } from '../../src/daemon/pidfile.js';
import { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { isOneLineError, runCli, tempHome } from './cli.js';
import { startDaemon, writeConfig } from './gateway-harness.js';
import { createAttached, runTurn, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();

interface Doctor {
  ok: boolean;
  checks: { name: string; ok: boolean; detail: string; fix?: string }[];
}

async function doctor(home: string, ...args: string[]): Promise<{ code: number | null; report: Doctor }> {
  const run = await runCli(home, ['doctor', '--json', ...args]);
  return { code: run.code, report: JSON.parse(run.stdout) as Doctor };
}

/**
 * Does what doctor's permissions check says to. (Until the daemon creates every file owner-only —
 * issue 12 item 4 — the database files come out 0644 and doctor rightly flags them.)
 */
async function ownerOnly(home: string): Promise<void> {
  const { report } = await doctor(home);
  const fix = report.checks.find((c) => c.name === 'permissions')!.fix;
  if (fix !== undefined) {
    expect(fix).toBe(`chmod -R go-rwx ${home}`);
    expect(spawnSync('chmod', ['-R', 'go-rwx', home]).status).toBe(0);
  }
}

function failed(report: Doctor): string[] {
  return report.checks.filter((c) => !c.ok).map((c) => c.name);
}

describe('gatehouse backup', { timeout: 120_000 }, () => {
  it('copies the live database online, owner-only, and never over an existing file', async () => {
    const d = await fx.daemon();
    const client = await d.connect();
    const session_id = await createAttached(client, { cwd: tempDir() });
    await runTurn(client, session_id, 's1', 'remember the backup');

    const dest = join(tempDir(), 'state-copy.db');
    const run = await runCli(d.home, ['backup', dest]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`to ${dest} (owner-only)`);
    expect(statSync(dest).mode & 0o777).toBe(0o600);
    const copy = new Database(dest, { readonly: true });
    const texts = copy.prepare('SELECT content FROM messages').pluck().all();
    copy.close();
    expect(texts).toContain('remember the backup');

    const again = await runCli(d.home, ['backup', dest]);
    expect(again.code).not.toBe(0);
    expect(isOneLineError(again.stderr)).toBe(true);
    expect(again.stderr).toContain('already exists');

    const byDefault = await runCli(d.home, ['backup']);
    expect(byDefault.code).toBe(0);
    const written = /to (\S+\.db) \(owner-only\)/.exec(byDefault.stdout)![1]!;
    expect(written.startsWith(join(d.home, 'backups', 'default-'))).toBe(true);
    expect(statSync(join(d.home, 'backups')).mode & 0o777).toBe(0o700);
    expect(statSync(written).mode & 0o777).toBe(0o600);

    // `gatehouse backup [PATH] [--profile NAME]`, as docs/daemon.md shows it.
    const named = await runCli(d.home, ['backup', '--profile', 'default', join(tempDir(), 'named.db')]);
    expect(named.code).toBe(0);
    const unknown = await runCli(d.home, ['backup', '--profile', 'nope']);
    expect(unknown.code).not.toBe(0);
    expect(isOneLineError(unknown.stderr)).toBe(true);
    expect(unknown.stderr).toContain('--profile nope is not one of the profiles');
  });
});

describe('gatehouse doctor', { timeout: 120_000 }, () => {
  it('passes on a healthy home, and names a damaged database with what to do; serve says the same', async () => {
    const d = await fx.daemon();
    await d.stop();
    fx.forget(d);
    await ownerOnly(d.home);
    const healthy = await doctor(d.home);
    expect(healthy.code).toBe(0);
    expect(healthy.report.ok).toBe(true);
    expect(healthy.report.checks.map((c) => c.name)).toEqual(
      expect.arrayContaining(['home', 'permissions', 'config', 'database default', 'search default']),
    );
    const plain = await runCli(d.home, ['doctor']);
    expect(plain.stdout).toContain('All checks passed.');

    const file = homeLayout(d.home).stateDb('default');
    writeFileSync(file, Buffer.alloc(8192, 7));
    const broken = await doctor(d.home);
    expect(broken.code).toBe(1);
    const check = broken.report.checks.find((c) => c.name === 'database default')!;
    expect(check.ok).toBe(false);
    expect(check.detail).toContain('SQLITE_NOTADB');
    expect(check.fix).toContain(`mv ${file} ${file}.broken`);
    expect(check.fix).toContain('gatehouse backup');

    const serve = await runCli(d.home, ['serve']);
    expect(serve.code).not.toBe(0);
    expect(isOneLineError(serve.stderr)).toBe(true);
    expect(serve.stderr).toContain(`Move it aside (mv ${file} ${file}.broken) and restore a backup`);
  });

  it('issue 26 item 7: a zero-length state.db is refused at start, and doctor says what to do', async () => {
    const d = await fx.daemon();
    await d.stop();
    fx.forget(d);
    await ownerOnly(d.home);
    const file = homeLayout(d.home).stateDb('default');
    for (const extra of ['-wal', '-shm']) writeFileSync(`${file}${extra}`, '', { mode: 0o600 });
    writeFileSync(file, '');

    const report = await doctor(d.home);
    expect(report.code).toBe(1);
    expect(failed(report.report)).toEqual(['database default']);
    const check = report.report.checks.find((c) => c.name === 'database default')!;
    expect(check.detail).toBe(
      `${file} is empty (0 bytes): its contents were lost; the gateway refuses to start on it`,
    );
    expect(check.fix).toContain(`mv ${file} ${file}.empty`);
    expect(check.fix).toContain('gatehouse backup');

    const serve = await runCli(d.home, ['serve']);
    expect(serve.code).not.toBe(0);
    expect(isOneLineError(serve.stderr)).toBe(true);
    expect(serve.stderr).toContain('the file is empty (0 bytes)');
    expect(serve.stderr).toContain(`mv ${file} ${file}.empty`);
    expect(statSync(file).size).toBe(0); // nothing was written into it
  });

  it('finds a missing search index and --repair-search rebuilds it; the search works again', async () => {
    const d = await fx.daemon();
    const client = await d.connect();
    const session_id = await createAttached(client, { cwd: tempDir() });
    await runTurn(client, session_id, 's1', 'findable words');
    await d.stop();
    fx.forget(d);
    const db = new Database(homeLayout(d.home).stateDb('default'));
    db.exec('DROP TABLE messages_fts');
    db.close();
    await ownerOnly(d.home);

    const broken = await doctor(d.home);
    expect(broken.code).toBe(1);
    expect(failed(broken.report)).toEqual(['search default']);
    expect(broken.report.checks.find((c) => c.name === 'search default')!.fix).toContain(
      'gatehouse doctor --repair-search',
    );
    const repaired = await doctor(d.home, '--repair-search');
    expect(repaired.code).toBe(0);
    expect(repaired.report).toMatchObject({ ok: true, repaired: ['default'] });

    const again = await fx.daemon({ home: d.home });
    const viewer = await again.connect();
    const { hits } = await viewer.call<{ hits: unknown[] }>('session.search', { query: 'findable' });
    expect(hits.length).toBeGreaterThan(0);
  });
});

describe('homes that used to leave the user stuck', { timeout: 120_000 }, () => {
  it('GATEHOUSE_HOME=/proc/nope gatehouse start fails at once with what to do', async () => {
    const run = await runCli('/proc/nope', ['start']);
    expect(run.code).not.toBe(0);
    expect(isOneLineError(run.stderr)).toBe(true);
    expect(run.stderr).toContain('cannot create the Gatehouse home /proc/nope');
    expect(run.stderr).toContain('set GATEHOUSE_HOME to a writable directory');
  });

  it('model.base_url that is not a URL, or missing, is one line naming the key and what it must be', async () => {
    const cases: [string, string][] = [
      ['model:\n  base_url: notaurl\n  model: m\n', 'model.base_url: must be an http(s) URL like https://'],
      ['model:\n  model: m\n', 'model.base_url: required: the http(s) URL of an OpenAI-compatible API'],
    ];
    for (const [yaml, expected] of cases) {
      const home = tempHome();
      writeConfig(home, yaml);
      const file = homeLayout(home).configFile;
      for (const args of [['start'], ['chat']]) {
        const run = await runCli(home, args, { input: 'hello\n' });
        expect(run.code).not.toBe(0);
        expect(isOneLineError(run.stderr)).toBe(true);
        expect(run.stderr).toContain(`${file}: ${expected}`);
        expect(run.stderr).not.toContain('unexpected error');
      }
      const checked = await doctor(home);
      expect(checked.code).toBe(1);
      expect(checked.report.checks.find((c) => c.name === 'config')!.detail).toContain(expected);
    }
  });

  it('a home too long for a Unix socket path still starts, hands out tickets and stops', async () => {
    const home = join(tempHome(), 'a-rather-long-folder-name'.repeat(4));
    expect(Buffer.byteLength(join(home, 'gateway.sock'))).toBeGreaterThan(107);
    const socket = homeLayout(home).controlSocket;
    expect(socket).toMatch(/^\/tmp\/gatehouse-\d+\/[0-9a-f]{16}\.sock$/);
    // --port 0: another daemon on the default port would otherwise add a fallback note to stderr.
    const start = await runCli(home, ['start', '--port', '0']);
    expect(start.stderr).toBe('');
    expect(start.code).toBe(0);
    try {
      expect(statSync(join(socket, '..')).mode & 0o777).toBe(0o700);
      const ticket = await runCli(home, ['ticket']);
      expect(ticket.code).toBe(0);
      const url = /running at (\S+) /.exec(start.stdout)![1]!;
      await (await GatewayClient.connect(url, ticket.stdout.trim())).close();
    } finally {
      expect((await runCli(home, ['stop'])).code).toBe(0);
    }
  });

  it('run/gateway.pid holds what docs/daemon.md says: the pid, then its start time', async () => {
    const d = await startDaemon();
    try {
      const [pid, startTime, ...rest] = readFileSync(homeLayout(d.home).pidFile, 'utf8').trim().split(' ');
      expect(Number(pid)).toBe(d.child.pid);
      expect(startTime).toBe(processStartTime(d.child.pid!));
      expect(rest).toEqual([]);
      const docs = readFileSync(new URL('../../docs/daemon.md', import.meta.url), 'utf8');
      expect(docs).toContain(
        '| `run/gateway.pid` | Two numbers: the pid of the running daemon, then its start time',
      );
    } finally {
      await d.stop();
    }
  });
});
