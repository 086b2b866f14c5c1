/**
 * Checkpoints and rollback (LOC-5 `checkpoints`, docs/checkpoints.md) through the real daemon, the
 * demo model and real bash: a command deletes and edits files, `/rollback` in `gatehouse chat` (and
 * checkpoint.restore over RPC, with its own approval) puts them back byte for byte, and the user's
 * own `.git` is never written. Without `checkpoints: true` nothing is snapshotted.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RpcCallError, type GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { runCli } from './cli.js';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { BACKENDS, nextEvent, startDaemon, useSharedDaemon } from './gateway-harness.js';
import {
  chatRequests,
  createAttached,
  lastToolResult,
  runTurn,
  tempDir,
  useFixture,
} from './seed-fixture.js';

const fx = useFixture();
const E2E_TIMEOUT_MS = 180_000;
/** Events under a loaded machine: generous, never a timing assertion. */
const EVENT_WAIT_MS = 90_000;
const BINARY = Buffer.from([0, 1, 2, 254, 255, 10, 13, 0, 128]);

/** Every path under `root` with its bytes' hash (directories as `dir`): a tree compared whole. */
function treeDigest(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const visit = (dir: string, rel: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const key = rel ? `${rel}/${name}` : name;
      const stat = lstatSync(path);
      if (stat.isDirectory()) {
        out[key] = 'dir';
        visit(path, key);
      } else
        out[key] = `${stat.mode & 0o777} ${createHash('sha256').update(readFileSync(path)).digest('hex')}`;
    }
  };
  visit(root, '');
  return out;
}

/** A working directory that is a git repository of the user's, with text, binary and nested files. */
function userRepo(): string {
  const cwd = tempDir();
  writeFileSync(join(cwd, 'a.txt'), 'alpha\n');
  writeFileSync(join(cwd, 'b.txt'), 'bravo\n');
  mkdirSync(join(cwd, 'sub'));
  writeFileSync(join(cwd, 'sub', 'c.bin'), BINARY);
  writeFileSync(join(cwd, 'run.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd,
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 'u',
        GIT_AUTHOR_EMAIL: 'u@x',
        GIT_COMMITTER_NAME: 'u',
        GIT_COMMITTER_EMAIL: 'u@x',
      },
    });
  git('init', '-q');
  git('add', '-A');
  git('commit', '-qm', 'user commit');
  return cwd;
}

/** checkpoint.restore, answering the approval it raises with `choice`; resolves with its result. */
async function restoreAnswering(
  client: GatewayClient,
  session_id: string,
  checkpoint: number,
  choice: 'once' | 'deny',
): Promise<Record<string, unknown>> {
  const asked = nextEvent(client, 'approval.request', () => true, EVENT_WAIT_MS);
  const restoring = client.call<Record<string, unknown>>('checkpoint.restore', { session_id, checkpoint });
  const request = (await asked).event;
  expect(request).toMatchObject({ kind: 'edit', choices: ['once', 'deny'] });
  await client.call('approval.respond', {
    session_id,
    prompt_id: request['prompt_id'],
    execution_generation: request['execution_generation'],
    choice,
  });
  return restoring;
}

const DAMAGE = 'rm a.txt && printf changed > b.txt && rm sub/c.bin && echo new > new.txt';

describe.each(BACKENDS)('checkpoints on %s', (store) => {
  beforeAll(() => {
    fx.store = store;
  });

  describe('checkpoints and /rollback', () => {
    describe('on one daemon (a repo and a session of their own each)', () => {
      let demo: DemoModelServer | null = null;
      afterAll(() => demo?.close());
      const daemon = useSharedDaemon(async () => {
        demo = await startDemoModel();
        return startDaemon({ store, config: `model: {base_url: ${demo.baseUrl}, model: gatehouse-demo}` });
      });

      it(
        'gatehouse chat --checkpoints: a command deletes and edits files, /rollback lists, /rollback 1 restores them byte for byte; the user .git is untouched',
        async () => {
          const d = await daemon();
          const cwd = userRepo();
          const before = treeDigest(cwd);
          const gitBefore = treeDigest(join(cwd, '.git'));

          // As docs/checkpoints.md shows it: printf 'run: …\no\n/rollback\n/rollback 1\no\n' | gatehouse chat --checkpoints
          // (the first `o` approves the command once: it is not on the allow-list)
          const run = await runCli(d.home, ['chat', '--checkpoints', '--cwd', cwd], {
            input: `run: ${DAMAGE}\no\n/rollback\n/rollback 1\no\n`,
          });
          expect(run.stderr).toBe('');
          expect(run.code).toBe(0);
          expect(run.stdout).toContain('Checkpoints (restore one with /rollback <n>):');
          expect(run.stdout).toMatch(
            / {2}1 {2}\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}terminal: rm a\.txt && printf changed/,
          );
          expect(run.stdout).toContain('Allow `rollback to checkpoint 1 (terminal: rm a.txt');
          expect(run.stdout).toContain(
            '(restored checkpoint 1: 2 recreated, 1 reverted, 1 removed; the files before are checkpoint 2)',
          );

          expect(treeDigest(cwd)).toEqual(before);
          expect(readFileSync(join(cwd, 'sub', 'c.bin'))).toEqual(BINARY);
          expect(treeDigest(join(cwd, '.git'))).toEqual(gitBefore);
          // The checkpoints live in the home, never beside the user's files.
          expect(existsSync(join(d.layout.profileDir('default'), 'checkpoints'))).toBe(true);
        },
        E2E_TIMEOUT_MS,
      );

      it(
        'checkpoint.list and checkpoint.restore over RPC: the restore asks its own approval; deny changes nothing, once restores',
        async () => {
          const d = await daemon();
          const client = await d.connect();
          const cwd = userRepo();
          const before = treeDigest(cwd);
          const gitBefore = treeDigest(join(cwd, '.git'));
          const session_id = await createAttached(client, { cwd, checkpoints: true, yolo: true });

          const created = nextEvent(client, 'checkpoint.created', () => true, EVENT_WAIT_MS);
          await runTurn(client, session_id, 's1', `run: ${DAMAGE}`);
          expect((await created).event).toMatchObject({ checkpoint: 1, tool: 'terminal', files: 4 });
          const damaged = treeDigest(cwd);
          expect(damaged).not.toEqual(before);

          const listed = await client.call<{
            checkpoints: { checkpoint: number; kind: string; label: string }[];
          }>('checkpoint.list', { session_id });
          expect(listed.checkpoints).toMatchObject([
            { checkpoint: 1, kind: 'tool', label: `terminal: ${DAMAGE}` },
          ]);

          // Denied: nothing changes.
          await expect(restoreAnswering(client, session_id, 1, 'deny')).resolves.toMatchObject({
            restored: false,
            why: 'denied',
          });
          expect(treeDigest(cwd)).toEqual(damaged);

          // Approved once: byte for byte, and the replaced state is saved as checkpoint 2.
          const restored = nextEvent(client, 'checkpoint.restored', () => true, EVENT_WAIT_MS);
          await expect(restoreAnswering(client, session_id, 1, 'once')).resolves.toMatchObject({
            restored: true,
            checkpoint: 1,
            saved_as: 2,
          });
          expect((await restored).event).toMatchObject({
            checkpoint: 1,
            recreated: 2,
            reverted: 1,
            removed: 1,
          });
          expect(treeDigest(cwd)).toEqual(before);
          expect(treeDigest(join(cwd, '.git'))).toEqual(gitBefore);

          // The rollback can itself be undone: checkpoint 2 holds the damaged tree.
          await restoreAnswering(client, session_id, 2, 'once');
          // Files are tracked, directories are not: the empty `sub/` the command left is not brought back.
          const filesOnly = (tree: Record<string, string>) =>
            Object.fromEntries(Object.entries(tree).filter(([, v]) => v !== 'dir'));
          expect(filesOnly(treeDigest(cwd))).toEqual(filesOnly(damaged));

          const unknown = await client
            .call('checkpoint.restore', { session_id, checkpoint: 9 })
            .catch((e: unknown) => e);
          expect(unknown).toBeInstanceOf(RpcCallError);
          expect((unknown as RpcCallError).reason).toBe('not_found');
        },
        E2E_TIMEOUT_MS,
      );
    });

    it(
      'without checkpoints: true nothing is snapshotted, and checkpoint.list says how to get them',
      async () => {
        const d = await fx.daemon();
        const client = await d.connect();
        const cwd = userRepo();
        const session_id = await createAttached(client, { cwd, yolo: true });
        await runTurn(client, session_id, 's1', `run: ${DAMAGE}`);
        expect(existsSync(join(cwd, 'a.txt'))).toBe(false);
        expect(existsSync(join(d.layout.profileDir('default'), 'checkpoints'))).toBe(false);
        const refused = await client.call('checkpoint.list', { session_id }).catch((e: unknown) => e);
        expect((refused as RpcCallError).reason).toBe('invalid_params');
        expect((refused as RpcCallError).message).toMatch(/created without checkpoints/);
      },
      E2E_TIMEOUT_MS,
    );

    it(
      'a tree over checkpoints.max_files is skipped, and the viewer and the model are told',
      async () => {
        const d = await fx.daemon({ extraConfig: 'checkpoints:\n  max_files: 3\n' });
        const client = await d.connect();
        const cwd = userRepo();
        const session_id = await createAttached(client, { cwd, checkpoints: true });
        const skipped = nextEvent(client, 'checkpoint.skipped', () => true, EVENT_WAIT_MS);
        await runTurn(client, session_id, 's1', 'run: echo hi');
        expect((await skipped).event['reason']).toMatch(/more than 3 files \(checkpoints\.max_files\)/);
        expect(lastToolResult(chatRequests(fx.demo).at(-1)!)).toMatch(
          /note: no checkpoint was taken before this call: the working tree has more than 3 files/,
        );
        const { checkpoints } = await client.call<{ checkpoints: unknown[] }>('checkpoint.list', {
          session_id,
        });
        expect(checkpoints).toEqual([]);
      },
      E2E_TIMEOUT_MS,
    );

    it(
      'checkpoints: true on a host without git is refused with invalid_params naming why',
      async () => {
        const noGit = tempDir(); // a PATH where no git is found
        const d = await fx.daemon({ env: { ...process.env, PATH: noGit } });
        const client = await d.connect();
        const cwd = userRepo();
        const refused = (await client
          .call('session.create', { cwd, checkpoints: true })
          .catch((e: unknown) => e)) as RpcCallError;
        expect(refused).toBeInstanceOf(RpcCallError);
        expect(refused.reason).toBe('invalid_params');
        expect(refused.details).toMatchObject({ field: 'checkpoints' });
        expect(refused.message).toMatch(/checkpoints cannot be honoured here: git was not found/);
        // The same daemon still creates a session without checkpoints; none was made for the refusal.
        const { session_id } = await client.call<{ session_id: string }>('session.create', { cwd });
        const { sessions } = await client.call<{ sessions: { session_id: string }[] }>('session.list', {
          scope: 'stored',
        });
        expect(sessions.map((s) => s.session_id)).toEqual([session_id]);
      },
      E2E_TIMEOUT_MS,
    );
  });
});
