import { mkdtempSync, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireBuild } from './cli.js';
import {
  BACKENDS,
  dropTestSchemas,
  nextEvent,
  resumeUntil,
  startDaemon,
  waitForState,
  type Backend,
  useSharedDaemon,
  type RunningDaemon,
} from './gateway-harness.js';
import { RpcCallError } from '../../src/surfaces/client/rpc-client.js';

beforeAll(requireBuild);

const running: RunningDaemon[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  await dropTestSchemas();
});
/** The backend of the cases running now (every case runs on each, see below). */
let backend: Backend = 'sqlite';
async function daemon(options: Parameters<typeof startDaemon>[0] = {}): Promise<RunningDaemon> {
  const d = await startDaemon({ ...options, store: backend });
  running.push(d);
  return d;
}
function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'gh-work-'));
}

type Snapshot = {
  session_id: string;
  stored_session_id: string;
  messages: { role: string; content: string | null; tool_calls?: unknown[] }[];
  message_count: number;
  execution_generation: number;
  prompts: { prompt_id: string; type: string; execution_generation: number; command?: string }[];
  state: string;
  info: Record<string, unknown>;
};

describe.each(BACKENDS)('local sessions on %s', (store) => {
  beforeAll(() => {
    backend = store;
  });

  describe('LOC-1/LOC-2/LOC-8 a turn through the real daemon', () => {
    it('creates a session, admits a prompt durably, streams the answer and keeps the transcript', async () => {
      const d = await daemon();
      const client = await d.connect();
      const cwd = tempDir();
      const created = await client.call<Snapshot>('session.create', { request_id: 'r-1', cwd });
      expect(created.session_id).toBe(created.stored_session_id);
      expect(created.session_id).toMatch(/^\d{8}_\d{6}_[0-9a-f]{8}$/);
      expect(created).toMatchObject({
        message_count: 0,
        messages: [],
        info: { source: 'cli', cwd, agent: 'lazy' },
      });

      await client.call('session.resume', { session_id: created.session_id });
      const completed = nextEvent(client, 'turn.complete');
      const receipt = await client.call('prompt.submit', {
        session_id: created.session_id,
        submission_id: 's-1',
        text: 'hello gatehouse',
      });
      expect(receipt).toMatchObject({ submission_id: 's-1', state: 'queued', duplicate: false });
      const done = await completed;
      expect(done.event).toMatchObject({ outcome: 'completed' });
      expect(String(done.event['final_text'])).toContain('hello gatehouse');

      const snapshot = await client.call<Snapshot>('session.resume', { session_id: created.session_id });
      expect(snapshot.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
      expect(snapshot.info['agent']).toBe('live');
    });

    it('runs the terminal tool in the session cwd and feeds its output back to the model', async () => {
      const d = await daemon();
      const client = await d.connect();
      const cwd = tempDir();
      // yolo: the command writes made.txt; this test is about the turn, not its approval.
      const { session_id } = await client.call<Snapshot>('session.create', { cwd, yolo: true });
      await client.call('session.resume', { session_id });
      const done = nextEvent(client, 'turn.complete');
      await client.call('prompt.submit', {
        session_id,
        submission_id: 'a',
        text: 'run: pwd && echo made > made.txt',
      });
      expect((await done).event).toMatchObject({ outcome: 'completed' });
      expect(existsSync(join(cwd, 'made.txt'))).toBe(true);
      const snapshot = await client.call<Snapshot>('session.resume', { session_id });
      expect(snapshot.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(snapshot.messages[2]!.content).toContain(cwd);
    });
  });

  describe('LOC-3 idempotent creation', () => {
    it('returns the same identity for the same request_id, across a restart, and refuses changed fields', async () => {
      const home = join(tempDir(), 'home');
      const cwd = tempDir();
      let d = await daemon({ home });
      let client = await d.connect();
      const first = await client.call<Snapshot>('session.create', { request_id: 'same', cwd, model: 'm-1' });
      await client.close();
      client = await d.connect();
      const again = await client.call<Snapshot>('session.create', { request_id: 'same', cwd, model: 'm-1' });
      expect(again.session_id).toBe(first.session_id);
      await expect(
        client.call('session.create', { request_id: 'same', cwd, model: 'm-2' }),
      ).rejects.toMatchObject({
        reason: 'invalid_params',
      });
      const other = await client.call<Snapshot>('session.create', { cwd, model: 'm-1' });
      expect(other.session_id).not.toBe(first.session_id);

      await d.kill();
      running.splice(running.indexOf(d), 1);
      d = await daemon({ home });
      client = await d.connect();
      const afterRestart = await client.call<Snapshot>('session.create', {
        request_id: 'same',
        cwd,
        model: 'm-1',
      });
      expect(afterRestart.session_id).toBe(first.session_id);
      expect(afterRestart.info).toMatchObject({ model: 'm-1', cwd });
    });
  });

  describe('LOC-8 FIFO and lost-ACK retry', () => {
    it('runs 20 submissions once each, in order, even when some are retried', async () => {
      const d = await daemon();
      const client = await d.connect();
      const { session_id } = await client.call<Snapshot>('session.create', { cwd: tempDir() });
      const receipts = [];
      for (let i = 0; i < 20; i++) {
        receipts.push(
          await client.call('prompt.submit', { session_id, submission_id: `s${i}`, text: `message ${i}` }),
        );
        if (i % 3 === 0) {
          const retry = await client.call('prompt.submit', {
            session_id,
            submission_id: `s${i}`,
            text: `message ${i}`,
          });
          expect(retry).toMatchObject({ admission_id: receipts[i]!['admission_id'], duplicate: true });
        }
      }
      await expect(
        client.call('prompt.submit', { session_id, submission_id: 's1', text: 'something else' }),
      ).rejects.toMatchObject({ reason: 'admission_conflict' });
      await client.call('session.resume', { session_id });
      const snapshot = await resumeUntil<Snapshot & { pending_admissions: unknown[] }>(
        client,
        session_id,
        (s) => s.pending_admissions.length === 0,
      );
      const users = snapshot.messages.filter((m) => m.role === 'user').map((m) => m.content);
      expect(users).toEqual(Array.from({ length: 20 }, (_, i) => `message ${i}`));
    });
  });

  describe('LOC-8 group commit through the real daemon', () => {
    it('admissions sent together share log flushes, and each is acknowledged once', async () => {
      type Storage = {
        writable: boolean;
        committed_operations: number;
        log_flushes: number;
        checkpoints: number;
        checkpoint_failures: number;
      };
      const d = await daemon();
      const client = await d.connect();
      const sessions = await Promise.all(
        Array.from({ length: 4 }, () => client.call<Snapshot>('session.create', { cwd: tempDir() })),
      );
      const before = (await client.call<{ storage: Storage }>('runtime.describe', {})).storage;
      // Sent without waiting: the frames reach the daemon together and gather into shared batches.
      const receipts = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          client.call<{ admission_id: string; duplicate: boolean }>('prompt.submit', {
            session_id: sessions[i % 4]!.session_id,
            submission_id: `g${i}`,
            text: `grouped ${i}`,
          }),
        ),
      );
      const after = (await client.call<{ storage: Storage }>('runtime.describe', {})).storage;
      expect(new Set(receipts.map((r) => r.admission_id)).size).toBe(40);
      expect(receipts.every((r) => !r.duplicate)).toBe(true);
      const operations = after.committed_operations - before.committed_operations;
      const flushes = after.log_flushes - before.log_flushes;
      expect(operations).toBeGreaterThanOrEqual(40); // the admissions (and the claims they started)
      expect(flushes).toBeGreaterThan(0);
      expect(flushes).toBeLessThanOrEqual(operations / 4); // one flush paid for several acknowledgements
      expect(after.writable).toBe(true);
      expect(after.checkpoint_failures).toBe(0);
    });
  });

  describe('LOC-5 rejections change nothing', () => {
    // Every case is refused: one daemon serves them all, and after each the store is still empty.
    const shared = useSharedDaemon(() => startDaemon({ store: backend }));
    it.each([
      [{ cwd: 'relative' }, 'invalid_params'],
      [{ worktree: true }, 'invalid_params'],
      [{ profile: 'other' }, 'invalid_params'],
      [{ capabilities: ['session:operator'] }, 'invalid_params'],
      [{ source: 'telegram' }, 'invalid_params'],
      [{ base_url: 'https://u:p@example.com/v1' }, 'invalid_params'],
      [{ toolsets: ['no-such-toolset'] }, 'invalid_params'],
    ])('session.create %j → %s', async (params, reason) => {
      const d = await shared();
      const client = await d.connect();
      const error = await client.call('session.create', params).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RpcCallError);
      expect((error as RpcCallError).reason).toBe(reason);
      const listed = await client.call<{ sessions: unknown[] }>('session.list', { scope: 'stored' });
      expect(listed.sessions).toEqual([]);
    });
  });

  describe('REC-6 draining', () => {
    it('answers runtime_draining to new input while a turn drains, then exits 0', async () => {
      const d = await daemon();
      const client = await d.connect();
      const cwd = tempDir();
      mkdirSync(join(cwd, 'x'));
      const { session_id } = await client.call<Snapshot>('session.create', { cwd, yolo: true });
      await client.call('session.resume', { session_id });
      const started = nextEvent(client, 'tool.start');
      await client.call('prompt.submit', { session_id, submission_id: 'slow', text: 'run: sleep 1' });
      await started;
      d.child.kill('SIGTERM');
      await waitForState(d.url, 'draining');
      await expect(
        client.call('prompt.submit', { session_id, submission_id: 'late', text: 'too late' }),
      ).rejects.toMatchObject({ reason: 'runtime_draining' });
      const done = await nextEvent(client, 'turn.complete');
      expect(done.event).toMatchObject({ outcome: 'completed' });
      expect(await d.stop()).toBe(0);
    });
  });
});
