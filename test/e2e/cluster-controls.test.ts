/**
 * Session controls on any instance (issue 14, docs/cluster.md "Controls on any instance"): three
 * real daemons on one PostgreSQL schema, clients on real WebSockets with real tickets, the demo
 * model, real bash.
 *
 * - With the session's lease free, `session.undo`, `retry`, `compress` and `reset` sent to B or C
 *   run there; viewers on every instance see their events, and a repeat (same request_id) sent to
 *   another instance is a duplicate that changes nothing.
 * - With A holding the lease (a turn runs there), a control sent to B is A's to answer: a reset is
 *   refused with A's `session_busy` naming A's running turn, and a compression waits on A for the
 *   turn to end (longer than the relay's deadline) and its result reaches B.
 * - A checkpoint restore sent to B while A holds the session runs on A (whose home keeps the
 *   checkpoint), asks its approval there, which is answered from C.
 * - `session.model` sent to B while A runs a turn gets A's `session_busy`; after the turn it moves
 *   the session, and every instance (its receipt cache included) shows the new model.
 * - A compression relayed to A, which is SIGKILLed while it waits: `owner_unreachable`; repeated,
 *   it runs on the instance that took the session over.
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localSessionKey } from '../../src/domain/local/receipt.js';
import { SUMMARY_MARKER } from '../../src/runtime/context/compress.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild } from './cli.js';
import { startCluster, type TestCluster } from './cluster-harness.js';
import { nextEvent } from './gateway-harness.js';
import {
  modelConfig,
  quiet,
  RecoveryRig,
  tempDir,
  texts,
  type Ack,
  type Snapshot,
} from './recovery-harness.js';

/** Three daemons start one after the other on a loaded machine: generous. */
const TIMEOUT = 240_000;
const EVENT_WAIT_MS = 90_000;
const rig = new RecoveryRig();
let cluster: TestCluster;

beforeAll(async () => {
  requireBuild();
  // A small verbatim tail, so a few turns are enough for a compression to summarise.
  cluster = await startCluster({ config: modelConfig(await rig.model(), 'compression: {tail_tokens: 40}') });
}, TIMEOUT);
afterAll(async () => {
  await cluster?.cleanup();
  await rig.cleanup();
});

interface Outcome {
  result?: unknown;
  reason?: string | undefined;
  details?: Record<string, unknown> | undefined;
}

/** The reason (or the result) of a call. */
const outcome = (call: Promise<unknown>): Promise<Outcome> =>
  call.then(
    (result) => ({ result }),
    (error: { reason?: string; details?: Record<string, unknown> }) => ({
      reason: error.reason,
      details: error.details,
    }),
  );

/** A client on each of the three instances. */
async function clients(): Promise<[GatewayClient, GatewayClient, GatewayClient]> {
  return [
    await cluster.daemon(0).connect(),
    await cluster.daemon(1).connect(),
    await cluster.daemon(2).connect(),
  ];
}

async function submit(client: GatewayClient, session_id: string, text: string): Promise<Ack> {
  return client.call<Ack>('prompt.submit', { session_id, submission_id: text, text });
}

/** A session created on `client` with `turns` settled turns. */
async function sessionWithTurns(client: GatewayClient, turns: string[], extra = {}): Promise<string> {
  const { session_id } = await client.call<Snapshot>('session.create', { cwd: tempDir(), ...extra });
  await client.call('session.resume', { session_id });
  for (const text of turns) {
    await submit(client, session_id, text);
    await quiet(client, session_id);
  }
  return session_id;
}

const controlRequests = () =>
  cluster.sql<{ target_epoch: string; kind: string; claimed: boolean }>(
    'SELECT target_epoch, kind, claimed_at IS NOT NULL AS claimed FROM control_requests ORDER BY id',
  );

describe('cluster: session controls on any instance', () => {
  it(
    'with the lease free, undo, retry, compress and reset sent to B or C run there; every instance sees them; repeats elsewhere are duplicates',
    async () => {
      const c = cluster;
      const [onA, onB, onC] = await clients();
      const session_id = await sessionWithTurns(onA, ['one', 'two', 'three', 'four', 'five']);
      for (const client of [onB, onC]) await client.call('session.resume', { session_id });
      await c.until(
        'the lease is given back',
        () => c.lease(session_id),
        (l) => l?.owner_epoch === null,
      );

      const rewoundOnA = nextEvent(
        onA,
        'transcript.rewound',
        (e) => e.session_id === session_id,
        EVENT_WAIT_MS,
      );
      const undo = { session_id, request_id: 'u1', turns: 1 };
      await expect(onB.call('session.undo', undo)).resolves.toMatchObject({
        turns_undone: 1,
        target_text: 'five',
        duplicate: false,
      });
      expect((await rewoundOnA).event).toMatchObject({ turns_undone: 1 });
      await expect(onC.call('session.undo', undo)).resolves.toMatchObject({
        turns_undone: 1,
        duplicate: true,
      });
      const afterUndo = await onC.call<Snapshot>('session.resume', { session_id });
      expect(texts(afterUndo)).not.toContain('five');
      expect(texts(afterUndo)).toContain('four');

      const retry = { session_id, request_id: 'r1' };
      const retried = await onC.call<{ admission_id: string; text: string; duplicate: boolean }>(
        'session.retry',
        retry,
      );
      expect(retried).toMatchObject({ text: 'four', duplicate: false });
      await quiet(onA, session_id);
      await expect(onB.call('session.retry', retry)).resolves.toMatchObject({
        admission_id: retried.admission_id,
        duplicate: true,
      });
      const rows = await c.sql<{ state: string }>('SELECT state FROM admissions WHERE admission_id = $1', [
        retried.admission_id,
      ]);
      expect(rows).toEqual([{ state: 'completed' }]);
      await c.until(
        'the lease is given back',
        () => c.lease(session_id),
        (l) => l?.owner_epoch === null,
      );

      const compressedOnA = nextEvent(
        onA,
        'session.compressed',
        (e) => e.session_id === session_id,
        EVENT_WAIT_MS,
      );
      await expect(onB.call('session.compress', { session_id })).resolves.toMatchObject({
        session_id,
        compressed: true,
      });
      await compressedOnA;
      // A, which validated the session's receipt before B compressed it, shows B's transcript.
      const compressed = (await onB.call<Snapshot>('session.resume', { session_id })).messages;
      expect(compressed.some((m) => m.content?.includes(SUMMARY_MARKER))).toBe(true);
      expect((await onA.call<Snapshot>('session.resume', { session_id })).messages).toEqual(compressed);

      const resetOnA = nextEvent(onA, 'session.reset', (e) => e.session_id === session_id, EVENT_WAIT_MS);
      const reset = { session_id, request_id: 'x1' };
      await expect(onC.call('session.reset', reset)).resolves.toMatchObject({ duplicate: false });
      await resetOnA;
      await expect(onA.call('session.reset', reset)).resolves.toMatchObject({ duplicate: true });
      for (const client of [onA, onB, onC])
        expect((await client.call<Snapshot>('session.resume', { session_id })).messages).toEqual([]);
      expect(await controlRequests()).toEqual([]);
    },
    TIMEOUT,
  );

  it(
    'with A holding the lease, a reset sent to B gets A’s session_busy; a compression sent to B waits on A for the turn (past the relay deadline) and its result reaches B',
    async () => {
      const c = cluster;
      const a = c.daemon(0);
      const [onA, onB, onC] = await clients();
      const session_id = await sessionWithTurns(onA, ['one', 'two', 'three', 'four']);
      await onC.call('session.resume', { session_id });
      const started = nextEvent(onA, 'turn.start', (e) => e.session_id === session_id, EVENT_WAIT_MS);
      const toolRunning = nextEvent(onA, 'tool.start', (e) => e.session_id === session_id, EVENT_WAIT_MS);
      await submit(onA, session_id, 'run: sleep 15');
      const generation = (await started).event['execution_generation'] as number;
      await toolRunning;
      expect((await c.lease(session_id))?.owner_epoch).toBe(a.epoch);

      // A's own answer: only A knows the turn it runs (B alone would say "held elsewhere").
      const refused = await outcome(onB.call('session.reset', { session_id, request_id: 'x1' }));
      expect(refused).toMatchObject({
        reason: 'session_busy',
        details: { session_id, running: { generation } },
      });
      expect(refused.details?.['held_elsewhere']).toBeUndefined();

      const compressedOnC = nextEvent(
        onC,
        'session.compressed',
        (e) => e.session_id === session_id,
        EVENT_WAIT_MS,
      );
      const doneOnA = nextEvent(onA, 'turn.complete', (e) => e.session_id === session_id, EVENT_WAIT_MS);
      const compressing = onB.call('session.compress', { session_id });
      const claimed = await c.until(
        'A starts the compression',
        controlRequests,
        (r) => r.length === 1 && r[0]!.claimed,
      );
      expect(claimed).toEqual([{ target_epoch: String(a.epoch), kind: 'session.compress', claimed: true }]);
      await expect(compressing).resolves.toMatchObject({ session_id, compressed: true });
      // It ran after the turn, in its slot.
      expect((await doneOnA).event).toMatchObject({ outcome: 'completed' });
      await compressedOnC;
      expect(await controlRequests()).toEqual([]);
    },
    TIMEOUT,
  );

  it(
    'a checkpoint restore sent to B while A holds the session runs on A (whose home keeps the checkpoint); its approval is answered from C',
    async () => {
      const c = cluster;
      const a = c.daemon(0);
      const [onA, onB, onC] = await clients();
      const cwd = tempDir();
      writeFileSync(join(cwd, 'b.txt'), 'bravo\n');
      const { session_id } = await onA.call<Snapshot>('session.create', {
        cwd,
        checkpoints: true,
        yolo: true,
      });
      for (const client of [onA, onB, onC]) await client.call('session.resume', { session_id });
      const created = nextEvent(onA, 'checkpoint.created', (e) => e.session_id === session_id, EVENT_WAIT_MS);
      await submit(onA, session_id, 'run: printf changed > b.txt && echo new > new.txt');
      await quiet(onA, session_id);
      expect((await created).event).toMatchObject({ checkpoint: 1 });
      expect(readFileSync(join(cwd, 'b.txt'), 'utf8')).toBe('changed');
      await c.until(
        'the lease is given back',
        () => c.lease(session_id),
        (l) => l?.owner_epoch === null,
      );

      // A restore on A holds the session there while it waits for its approval…
      const firstAsked = nextEvent(
        onC,
        'approval.request',
        (e) => e.session_id === session_id,
        EVENT_WAIT_MS,
      );
      const first = onA.call('checkpoint.restore', { session_id, checkpoint: 1 });
      const firstPrompt = (await firstAsked).event;
      expect((await c.lease(session_id))?.owner_epoch).toBe(a.epoch);
      // …so the one sent to B goes to A, and waits there behind it.
      const secondAsked = nextEvent(
        onC,
        'approval.request',
        (e) => e.session_id === session_id && e.event['prompt_id'] !== firstPrompt['prompt_id'],
        EVENT_WAIT_MS,
      );
      const second = onB.call('checkpoint.restore', { session_id, checkpoint: 1 });
      await c.until('A starts the restore sent to B', controlRequests, (r) =>
        r.some((x) => x.kind === 'checkpoint.restore' && x.claimed),
      );
      const answer = (prompt: Record<string, unknown>, choice: string) =>
        onC.call('approval.respond', {
          session_id,
          prompt_id: prompt['prompt_id'],
          execution_generation: prompt['execution_generation'],
          choice,
        });
      await answer(firstPrompt, 'deny');
      await expect(first).resolves.toMatchObject({ restored: false, why: 'denied' });
      expect(readFileSync(join(cwd, 'b.txt'), 'utf8')).toBe('changed');

      const restoredOnC = nextEvent(
        onC,
        'checkpoint.restored',
        (e) => e.session_id === session_id,
        EVENT_WAIT_MS,
      );
      await answer((await secondAsked).event, 'once');
      await expect(second).resolves.toMatchObject({ restored: true, checkpoint: 1, saved_as: 2 });
      expect((await restoredOnC).event).toMatchObject({ checkpoint: 1 });
      expect(readFileSync(join(cwd, 'b.txt'), 'utf8')).toBe('bravo\n');
      expect(existsSync(join(cwd, 'new.txt'))).toBe(false);
      expect(await controlRequests()).toEqual([]);
    },
    TIMEOUT,
  );

  it(
    'session.model sent to B while A runs a turn gets A’s session_busy; sent again after it, it moves the session and every instance sees the new model',
    async () => {
      const c = cluster;
      const [onA, onB, onC] = await clients();
      const session_id = await sessionWithTurns(onA, ['one']);
      for (const client of [onB, onC]) await client.call('session.resume', { session_id });
      const started = nextEvent(onA, 'turn.start', (e) => e.session_id === session_id, EVENT_WAIT_MS);
      const toolRunning = nextEvent(onA, 'tool.start', (e) => e.session_id === session_id, EVENT_WAIT_MS);
      const doneOnA = nextEvent(onA, 'turn.complete', (e) => e.session_id === session_id, EVENT_WAIT_MS);
      await submit(onA, session_id, 'run: sleep 10');
      const generation = (await started).event['execution_generation'] as number;
      await toolRunning;
      expect((await c.lease(session_id))?.owner_epoch).toBe(c.daemon(0).epoch);

      const move = { session_id, model: 'moved-model' };
      const refused = await outcome(onB.call('session.model', move));
      expect(refused).toMatchObject({
        reason: 'session_busy',
        details: { session_id, running: { generation } },
      });
      await doneOnA;

      const movedOnA = nextEvent(onA, 'session.model', (e) => e.session_id === session_id, EVENT_WAIT_MS);
      await expect(onB.call('session.model', move)).resolves.toMatchObject({
        model: 'moved-model',
        changed: true,
      });
      expect((await movedOnA).event).toMatchObject({ model: 'moved-model' });
      for (const client of [onA, onB, onC])
        expect(await client.call('session.info', { session_id })).toMatchObject({ model: 'moved-model' });
      await expect(onC.call('session.model', move)).resolves.toMatchObject({ changed: false });
    },
    TIMEOUT,
  );

  it(
    'a compression relayed to A, SIGKILLed while it waits, is owner_unreachable; repeated, it runs on the instance that took the session over',
    async () => {
      const c = cluster;
      const a = c.daemon(0);
      const [onA, onB] = await clients();
      const session_id = await sessionWithTurns(onA, ['one', 'two', 'three', 'four']);
      const toolRunning = nextEvent(onA, 'tool.start', (e) => e.session_id === session_id, EVENT_WAIT_MS);
      await submit(onA, session_id, 'run: sleep 60');
      await toolRunning;
      expect((await c.lease(session_id))?.owner_epoch).toBe(a.epoch);

      const compressing = outcome(onB.call('session.compress', { session_id }));
      await c.until('A starts the compression', controlRequests, (r) => r.length === 1 && r[0]!.claimed);
      await c.kill(0);
      expect(await compressing).toMatchObject({
        reason: 'owner_unreachable',
        details: { retryable: true, owner_epoch: a.epoch },
      });
      // Nothing of it was written by A: the session's transcript was never replaced.
      const lineage = await c.sql<{ n: string }>(
        'SELECT count(*) AS n FROM sessions WHERE parent_session_id IS NOT NULL AND session_key = $1',
        [localSessionKey(session_id)],
      );
      expect(lineage).toEqual([{ n: '0' }]);
      await c.until(
        'another instance took the session',
        () => c.lease(session_id),
        (l) => l?.owner_epoch !== a.epoch,
      );
      await expect(onB.call('session.compress', { session_id })).resolves.toMatchObject({ session_id });
      expect(await controlRequests()).toEqual([]);
    },
    TIMEOUT,
  );
});
