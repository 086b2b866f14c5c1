/**
 * Safe mode (issue 15, SPEC LOC-5) through the real daemon, the demo model and real bash: a
 * safe_mode session's tools run in an isolated worker process with an allow-listed environment,
 * rlimits, a pids cgroup and no network; a worker that dies fails only its own turn.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { BACKENDS, nextEvent, type RunningDaemon } from './gateway-harness.js';
import { storeRows } from './store-rows.js';
import { chatRequests, createAttached, lastToolResult, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();
const E2E_TIMEOUT_MS = 120_000;
/** The command the worker-kill case runs, unique to this process: another test run on the machine runs its own. */
const SENTINEL = `sleep 41.${String(process.pid).padStart(7, '0')}`;
const CANARY = 'canary-7f3a9c';
const LIMITS = [
  'safe_mode:',
  '  memory_mb: 256',
  '  cpu_s: 20',
  '  processes: 48',
  '  idle_s: 30',
  // A normal session's terminal is given the canary by name; safe mode ignores tools: additions.
  'tools:',
  '  env_passthrough: [SAFE_MODE_TEST_CANARY]',
].join('\n');

async function daemon(): Promise<RunningDaemon> {
  return fx.daemon({ extraConfig: LIMITS, env: { ...process.env, SAFE_MODE_TEST_CANARY: CANARY } });
}

/** Runs `command` in a new turn and returns what the model was told the terminal returned. */
async function run(client: GatewayClient, sessionId: string, id: string, command: string): Promise<string> {
  const done = nextEvent(client, 'turn.complete', (e) => e.session_id === sessionId, 60_000);
  await client.call('prompt.submit', { session_id: sessionId, submission_id: id, text: `run: ${command}` });
  expect((await done).event['outcome']).toBe('completed');
  return lastToolResult(chatRequests(fx.demo).at(-1)!);
}

/** Live processes whose command line contains `needle` (and their parent pids). */
function processes(needle: string): { pid: number; ppid: number }[] {
  const out: { pid: number; ppid: number }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (!cmdline.includes(needle)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      out.push({ pid: Number(entry), ppid: Number(fields[1]) });
    } catch {
      // Ended while we looked.
    }
  }
  return out;
}

/** The parent pid of a live process (1 once it is gone). */
function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return 1;
  }
}

const netnsWorks = spawnSync('unshare', ['--net', 'true']).status === 0;

describe.each(BACKENDS)('safe mode on %s', (store) => {
  beforeAll(() => {
    fx.store = store;
  });

  describe('safe mode: the isolated worker', () => {
    it(
      'a safe-mode command cannot read the daemon environment; a normal session can (the matching case)',
      async () => {
        const d = await daemon();
        const client = await d.connect();
        const cwd = tempDir();
        const normal = await createAttached(client, { cwd, yolo: true });
        const safe = await createAttached(client, { cwd, yolo: true, safe_mode: true });
        const show = 'echo "canary=[$SAFE_MODE_TEST_CANARY] home=[$HOME] pwd=[$(pwd)]"';

        expect(await run(client, normal, 'n1', show)).toContain(`canary=[${CANARY}]`);
        const isolated = await run(client, safe, 's1', show);
        expect(isolated).toContain('canary=[]');
        expect(isolated).toContain(`pwd=[${cwd}]`); // tools still work in the session's cwd
        expect(isolated).toMatch(new RegExp(`home=\\[${d.layout.runDir}/workers/[^\\]]+\\]`));

        // safe_mode implies ignore_user_config in the frozen policy, and session.info says both.
        const info = await client.call<Record<string, unknown>>('session.info', { session_id: safe });
        expect(info).toMatchObject({ safe_mode: true, ignore_user_config: true });
        const plain = await client.call<Record<string, unknown>>('session.info', { session_id: normal });
        expect(plain).toMatchObject({ safe_mode: false, ignore_user_config: false });
      },
      E2E_TIMEOUT_MS,
    );

    // The kernel's limits on the worker, not the store, are what this proves: SQLite only (docs/testing.md).
    it.runIf(store === 'sqlite')(
      'unbounded allocation and a fork bomb are stopped by the limits; the daemon and other sessions go on',
      async () => {
        const d = await daemon();
        const client = await d.connect();
        const cwd = tempDir();
        const safe = await createAttached(client, { cwd, yolo: true, safe_mode: true });
        const other = await createAttached(client, { cwd, yolo: true });

        const grown = await run(client, safe, 'alloc', 'x=a; while true; do x=$x$x; done');
        expect(grown).toMatch(/^(exit code [1-9]|killed by signal)/);
        expect(grown).toMatch(/cannot allocate|xmalloc|memory/i);

        // The bomb, its errors into bomb.err; then, with builtins only (nothing is left to fork),
        // a wait until the kernel has refused one of its forks (bash's message in bomb.err, shown
        // here), however long a loaded machine makes that, and the cgroup's count.
        const bomb = await run(
          client,
          safe,
          'bomb',
          ':(){ :|:& }; : 2>bomb.err; until [[ $refused ]]; do while IFS= read -r l; do ' +
            '[[ $l == *fork*"Resource temporarily unavailable"* ]] && refused=$l && break; ' +
            'done < bomb.err; done; echo "$refused"; ' +
            'while IFS=: read -r _ c p; do [[ $c == pids ]] && g=/sys/fs/cgroup/pids$p; ' +
            '[[ -z $c && -z $g ]] && g=/sys/fs/cgroup$p; done < /proc/self/cgroup; ' +
            'read -r cur < $g/pids.current; read -r max < $g/pids.max; echo "pids=$cur max=$max"',
        );
        expect(bomb).toMatch(/fork: (retry: )?Resource temporarily unavailable/);
        const [, current, max] = /pids=(\d+) max=(\d+)/.exec(bomb) ?? [];
        expect(Number(max)).toBe(48);
        expect(Number(current)).toBeLessThanOrEqual(48);
        expect(await run(client, other, 'other', 'echo still-healthy')).toContain('still-healthy');
        // Nothing of the bomb is left running, and the safe session works again.
        expect(await run(client, safe, 'after', 'echo safe-again')).toContain('safe-again');
        const health = (await fetch(`${d.url}/healthz`).then((r) => r.json())) as { state: string };
        expect(health.state).toBe('ready');
      },
      E2E_TIMEOUT_MS,
    );

    // The kernel's limits on the worker, not the store, are what this proves: SQLite only (docs/testing.md).
    it.runIf(store === 'sqlite')(
      'CPU time, open files and address space are limited per command: a busy loop is stopped at cpu_s; a normal session has no such limits',
      async () => {
        const d = await fx.daemon({
          extraConfig: ['safe_mode:', '  memory_mb: 300', '  cpu_s: 2', '  open_files: 64'].join('\n'),
        });
        const client = await d.connect();
        const cwd = tempDir();
        const safe = await createAttached(client, { cwd, yolo: true, safe_mode: true });
        const normal = await createAttached(client, { cwd, yolo: true });
        const show = 'echo "cpu=$(ulimit -t) files=$(ulimit -n) as=$(ulimit -v)"';

        expect(await run(client, safe, 'l1', show)).toContain(`cpu=2 files=64 as=${300 * 1024}`);
        const plain = await run(client, normal, 'l2', show);
        expect(plain).toContain('cpu=unlimited');
        expect(plain).not.toContain('files=64 ');
        // Two seconds of CPU, and the kernel stops the loop (SIGKILL, as the soft and hard limits
        // are the same; SIGXCPU where it sees the soft one first), long before the command timeout.
        const spun = await run(client, safe, 'l3', 'while :; do :; done');
        expect(spun).toMatch(/^killed by signal (SIGKILL|SIGXCPU)/);
        expect(await run(client, safe, 'l4', 'echo after-the-loop')).toContain('after-the-loop');
      },
      E2E_TIMEOUT_MS,
    );

    it(
      'SIGKILL of the worker mid-command fails that turn (worker_failed); other sessions and the next turn work',
      async () => {
        const d = await daemon();
        const client = await d.connect();
        const cwd = tempDir();
        const safe = await createAttached(client, { cwd, yolo: true, safe_mode: true });
        const other = await createAttached(client, { cwd, yolo: true, safe_mode: true });
        expect(await run(client, other, 'o1', 'echo other-before')).toContain('other-before');

        const started = nextEvent(client, 'tool.start', (e) => e.session_id === safe);
        const completed = nextEvent(client, 'tool.complete', (e) => e.session_id === safe);
        const done = nextEvent(client, 'turn.complete', (e) => e.session_id === safe);
        const settled = nextEvent(client, 'admission.settled', (e) => e.session_id === safe, 60_000);
        const requestsBefore = chatRequests(fx.demo).length;
        await client.call('prompt.submit', {
          session_id: safe,
          submission_id: 'k1',
          text: `run: ${SENTINEL}`,
        });
        await started;
        let workers: { pid: number; ppid: number }[] = [];
        while (workers.length < 2 || processes(SENTINEL).length === 0) {
          await new Promise((r) => setTimeout(r, 50));
          workers = processes('worker-main.js').filter((p) => p.ppid === d.child.pid);
        }
        expect(workers).toHaveLength(2); // one per session
        // The worker running the sleep: an ancestor of its process.
        const ancestors = new Set<number>();
        for (let pid = processes(SENTINEL)[0]!.pid; pid > 1; pid = parentOf(pid)) ancestors.add(pid);
        workers = workers.filter((w) => ancestors.has(w.pid));
        expect(workers).toHaveLength(1);
        process.kill(workers[0]!.pid, 'SIGKILL');

        const failed = (await completed).event;
        expect(failed['is_error']).toBe(true);
        expect(String(failed['summary'])).toMatch(/isolated worker .*killed by SIGKILL/);
        const turn = (await done).event;
        expect(turn['outcome']).toBe('failed');
        expect(turn['error']).toMatchObject({ reason: 'worker_failed' });
        expect(String((turn['error'] as { message: string }).message)).toMatch(
          /isolated worker .*killed by SIGKILL, so this turn failed/,
        );
        expect((await settled).event['outcome']).toBe('failed');
        // The turn ended there: the model was not asked to go on after the crash.
        expect(chatRequests(fx.demo).length).toBe(requestsBefore + 1);
        expect(processes(SENTINEL)).toHaveLength(0); // what it ran went with it
        // The admission is settled failed with the reason (not `unknown`), the tool result stored.
        const db = await storeRows(d, store);
        try {
          const row = await db.get<{ state: string; detail: string | null }>(
            `SELECT state, detail FROM admissions WHERE logical_id = ? AND submission_id = 'k1'`,
            safe,
          );
          expect(row!.state).toBe('failed');
          expect(row!.detail ?? '').toMatch(/^worker_failed: /);
        } finally {
          await db.close();
        }
        const history = await client.call<{ messages: { role: string; content: string }[] }>(
          'session.history',
          { session_id: safe },
        );
        expect(history.messages.at(-1)).toMatchObject({ role: 'tool' });
        expect(history.messages.at(-1)!.content).toMatch(/killed by SIGKILL/);

        // Another safe-mode session, with its own worker, was untouched.
        expect(await run(client, other, 'o2', 'echo other-after')).toContain('other-after');

        expect(await run(client, safe, 'k2', 'echo fresh-worker')).toContain('fresh-worker');
        const fresh = processes('worker-main.js').filter((p) => p.ppid === d.child.pid);
        expect(fresh.map((p) => p.pid)).not.toContain(workers[0]!.pid);
        const health = (await fetch(`${d.url}/healthz`).then((r) => r.json())) as { state: string };
        expect(health.state).toBe('ready');
      },
      E2E_TIMEOUT_MS,
    );

    it.runIf(netnsWorks)(
      'a safe-mode command cannot connect to a loopback listener; a normal session can',
      async () => {
        const connections: net.Socket[] = [];
        const server = net.createServer((socket) => {
          connections.push(socket);
          socket.end();
        });
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        const port = (server.address() as net.AddressInfo).port;
        try {
          const d = await daemon();
          const client = await d.connect();
          const cwd = tempDir();
          const safe = await createAttached(client, { cwd, yolo: true, safe_mode: true });
          const normal = await createAttached(client, { cwd, yolo: true });
          const probe = `(echo hi > /dev/tcp/127.0.0.1/${port}) 2>&1 && echo net=connected || echo net=refused`;

          expect(await run(client, safe, 'net1', probe)).toContain('net=refused');
          expect(connections).toHaveLength(0);
          expect(await run(client, normal, 'net2', probe)).toContain('net=connected');
          expect(connections.length).toBeGreaterThan(0);
        } finally {
          for (const socket of connections) socket.destroy();
          server.close();
        }
      },
      E2E_TIMEOUT_MS,
    );

    it(
      'limits the kernel refuses make session.create refuse safe_mode with invalid_params naming why',
      async () => {
        const nrOpen = Number(readFileSync('/proc/sys/fs/nr_open', 'utf8'));
        const d = await fx.daemon({ extraConfig: `safe_mode:\n  open_files: ${nrOpen + 1}\n` });
        const client = await d.connect();
        const cwd = tempDir();
        await expect(client.call('session.create', { cwd, safe_mode: true })).rejects.toMatchObject({
          reason: 'invalid_params',
          details: { field: 'safe_mode' },
        });
        await expect(client.call('session.create', { cwd, safe_mode: true })).rejects.toThrow(
          /kernel refused the safe_mode limits/,
        );
        // The same daemon creates a normal session, and nothing was created for the refused one.
        const { session_id } = await client.call<{ session_id: string }>('session.create', { cwd });
        expect(session_id).toBeTruthy();
        expect(existsSync(`${d.layout.runDir}/workers`)).toBe(false);
      },
      E2E_TIMEOUT_MS,
    );
  });
});
