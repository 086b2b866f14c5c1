/**
 * What a tool can reach of the gateway (issue 25, docs/tool-reach.md), through the real daemon, the
 * demo model's `run: <command>` and real bash: the daemon's secrets are in neither a tool's
 * environment nor the daemon's own /proc/<pid>/environ, from a normal session or from safe mode.
 */
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI } from './cli.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { createAttached, runCommand, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();
/** Safe mode needs a network namespace (docs/tools.md); its cases are skipped where there is none. */
const isolationWorks = spawnSync('unshare', ['--net', 'true']).status === 0;
const E2E_TIMEOUT_MS = 120_000;

/** Secrets under names no scrub list would know, and the provider key under an unusual name. */
const SECRETS = {
  GATEHOUSE_TEST_SECRET: 'planted-gatehouse-7d1e',
  MYSQL_PWD: 'planted-mysql-40c2',
  SMTP_PASS: 'planted-smtp-9b77',
  ZQX_PROVIDER_CRED: 'sk-planted-provider-51aa',
};

const run = (client: GatewayClient, sessionId: string, id: string, command: string): Promise<string> =>
  runCommand(fx, client, sessionId, id, command);

/** Prints the environ of every ancestor of the command up to and including `daemonPid`, then `env`. */
function walkUp(daemonPid: number): string {
  return [
    'p=$$',
    'while [ "$p" -gt 1 ]; do',
    '  echo "== environ of $p"; tr "\\0" "\\n" < /proc/$p/environ 2>&1',
    `  [ "$p" = ${daemonPid} ] && echo "reached-daemon" && break`,
    "  p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2)",
    'done',
    `echo "== daemon"; tr "\\0" "\\n" < /proc/${daemonPid}/environ 2>&1`,
    'echo "== env"; env',
  ].join('\n');
}

describe('tools cannot read the gateway secrets (issue 25, item 4)', () => {
  it(
    "neither `env` nor /proc/<ancestor>/environ shows a secret of the daemon's environment, in a normal session or in safe mode",
    async () => {
      const d = await fx.daemon({
        extraConfig: '  api_key_env: ZQX_PROVIDER_CRED',
        env: { ...process.env, ...SECRETS },
      });
      const client = await d.connect();
      const cwd = tempDir();
      const normal = await createAttached(client, { cwd, yolo: true });
      const safe = await createAttached(client, { cwd, yolo: true, safe_mode: true });
      const daemonPid = d.child.pid!;

      const seen = await run(client, normal, 'n1', walkUp(daemonPid));
      expect(seen).toContain('reached-daemon');
      expect(seen).toMatch(/== daemon\n(.*\n)*PATH=/); // the daemon's environ was readable: the read was real
      const fromSafe = await run(client, safe, 's1', walkUp(daemonPid));
      expect(fromSafe).toContain('== env');
      for (const [name, value] of Object.entries(SECRETS)) {
        for (const output of [seen, fromSafe]) {
          expect(output).not.toContain(value);
          expect(output).not.toContain(`${name}=`);
        }
      }
      // The provider key still reached the model: the daemon kept it in memory.
      const auth = fx.demo.requests.find((r) => r.path === '/v1/chat/completions')?.headers['authorization'];
      expect(auth).toBe(`Bearer ${SECRETS.ZQX_PROVIDER_CRED}`);
    },
    E2E_TIMEOUT_MS,
  );
});

describe('the agent cannot approve itself (issue 25, item 2)', () => {
  it(
    "a tool driving the gateway's own CLI is refused at the control socket, and at the listener: the victim survives",
    async () => {
      const d = await fx.daemon();
      const client = await d.connect();
      const cwd = tempDir();
      const victim = join(tempDir('gh-victim-'), 'V');
      mkdirSync(victim);
      const session = await createAttached(client, { cwd, yolo: true });
      // From a script, so the command text does not name the home (that alone is refused, item 5):
      // the socket's own check is what is proven here.
      writeFileSync(
        join(cwd, 'drive.sh'),
        `printf 'run: rm -rf ${victim}\\no\\n' | GATEHOUSE_HOME=${d.home} ${process.execPath} ${CLI} chat --cwd ${cwd}\n`,
      );

      const chat = await run(client, session, 'self-approve', 'bash drive.sh; echo "chat exit $?"');
      expect(chat).toContain('started by the gateway');
      expect(chat).not.toMatch(/chat exit 0/);
      expect(existsSync(victim)).toBe(true);

      // A job of its own (not stopped with the command's group), orphaned when the shell exits: it is
      // no longer the daemon's descendant, but still in the command's session.
      const orphanCommand =
        'set -m; (sleep 0.5; echo "parent $(ps -o ppid= -p $BASHPID)"; bash drive.sh 2>&1; echo "orphan exit $?") &';
      const orphan = await run(client, session, 'orphan', orphanCommand);
      expect(Number(/parent\s+(\d+)/.exec(orphan)?.[1])).not.toBe(d.child.pid);
      expect(orphan).toContain('started by the gateway');
      expect(existsSync(victim)).toBe(true);

      // The same from a safe-mode session: refused at the control socket where the kernel reports the
      // peer across the worker's network namespace, and in any case the listener is out of its reach.
      if (isolationWorks) {
        const safe = await createAttached(client, { cwd, yolo: true, safe_mode: true });
        const fromSafe = await run(client, safe, 'safe-orphan', orphanCommand);
        expect(fromSafe).toMatch(/started by the gateway|ENETUNREACH/);
        expect(fromSafe).not.toContain('orphan exit 0');
        expect(existsSync(victim)).toBe(true);
      }

      // The listener refuses the same process tree whatever it would log in, mint or upgrade with.
      const http = await run(
        client,
        session,
        'listener',
        `${process.execPath} -e "fetch('${d.url}/api/auth/ws-ticket', { method: 'POST' }).then(async (r) => console.log(r.status, await r.text()))"`,
      );
      expect(http).toContain('403');
      expect(http).toContain('"reason":"spawned_by_gateway"');

      // The owner, not spawned by the gateway, still gets in.
      const health = await fetch(`${d.url}/healthz`);
      expect(health.status).toBe(200);
    },
    E2E_TIMEOUT_MS,
  );
});

describe("the gateway's own files are off-limits to tools (issue 25, item 5)", () => {
  it(
    'a cwd inside the home is refused at creation; yolo commands naming the home are refused and touch nothing',
    async () => {
      const d = await fx.daemon();
      const client = await d.connect();
      const stateDb = d.layout.stateDb('default');
      const before = { config: readFileSync(d.layout.configFile, 'utf8') };

      for (const cwd of [d.home, dirname(stateDb)]) {
        const refused = await client.call('session.create', { cwd, yolo: true }).catch((e: unknown) => e);
        expect(refused).toMatchObject({ reason: 'cwd_in_home', details: { field: 'cwd' } });
      }

      const cwd = tempDir();
      symlinkSync(d.home, join(cwd, 'innocent'));
      const session = await createAttached(client, { cwd, yolo: true });
      for (const [i, command] of [
        `echo x > ${stateDb}`,
        `cd ${dirname(stateDb)} && echo x > state.db`,
        `echo 'listener: {port: 1}' > ${d.layout.configFile}`,
        'echo x > innocent/config.yaml',
        `cd ${dirname(d.home)} && echo x > ./${basename(d.home)}/config.yaml`,
      ].entries()) {
        const result = await run(client, session, `c${i}`, command);
        expect(result).toContain("Refused: this command names the gateway's own files");
      }
      // The daemon writes its database meanwhile; what matters is that it is still one.
      expect(readFileSync(stateDb).subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
      expect(readFileSync(d.layout.configFile, 'utf8')).toBe(before.config);
      // Its own folder is still its to use: the matching case.
      expect(await run(client, session, 'ok', 'echo x > state.db && cat state.db')).toContain('x');
    },
    E2E_TIMEOUT_MS,
  );
});

describe('a safe-mode session runs its hooks inside its isolation (issue 25, item 6)', () => {
  it.runIf(isolationWorks)(
    "a project hook of a safe session gets the worker's HOME and no network; a normal session's hook gets the host's",
    async () => {
      const d = await fx.daemon();
      const client = await d.connect();
      const { port } = new URL(d.url);
      const cwd = tempDir();
      mkdirSync(join(cwd, '.gatehouse'));
      // turn_start: where it ran, and whether the daemon's listener was reachable from there.
      const probe =
        `net=$( (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo reachable || echo isolated); ` +
        'echo "home=$HOME $net" >> hook-report.txt';
      writeFileSync(
        join(cwd, '.gatehouse', 'hooks.yaml'),
        `turn_start:\n  - name: probe\n    command: ${JSON.stringify(probe)}\n`,
      );
      const safe = await createAttached(client, { cwd, safe_mode: true, accept_hooks: true, yolo: true });
      await run(client, safe, 's1', 'true');
      const normal = await createAttached(client, { cwd, accept_hooks: true, yolo: true });
      await run(client, normal, 'n1', 'true');
      const [fromSafe, fromNormal] = readFileSync(join(cwd, 'hook-report.txt'), 'utf8').trim().split('\n');
      expect(fromSafe).toMatch(new RegExp(`^home=${d.layout.runDir}/workers/\\S+ isolated$`));
      expect(fromNormal).toBe(`home=${homedir()} reachable`);
    },
    E2E_TIMEOUT_MS,
  );
});
