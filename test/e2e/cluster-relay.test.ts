/**
 * Controls on any instance (issue 14, docs/cluster.md "Controls on any instance"): three real
 * daemons on one PostgreSQL schema, clients on real WebSockets with real tickets, the demo model,
 * real bash. A turn runs on A; a viewer on B sees its approval prompt (snapshot and event) and
 * approves it on B: the command runs once on A and its result reaches B; wrong answers sent via B
 * are refused exactly as on A. `session.interrupt` sent to C stops a turn sleeping on A, and a
 * clarify answer given on C reaches the model.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireBuild } from './cli.js';
import { startCluster, type TestCluster } from './cluster-harness.js';
import { nextEvent, sessionEvent, type SessionEvent } from './gateway-harness.js';
import { modelConfig, ranLog, RecoveryRig, tempDir, type Ack, type Snapshot } from './recovery-harness.js';
import { chatRequests, lastToolResult } from './seed-fixture.js';

/** Three daemons start one after the other on a loaded machine: generous. */
const TIMEOUT = 240_000;
const rig = new RecoveryRig();
let cluster: TestCluster;

beforeAll(async () => {
  requireBuild();
  // A long lease: a stopped owner stays the live owner for the whole unanswered relay (last case).
  cluster = await startCluster({ config: modelConfig(await rig.model()), leaseS: 60 });
}, TIMEOUT);
afterAll(async () => {
  await cluster?.cleanup();
  await rig.cleanup();
});

interface Prompt {
  prompt_id: string;
  execution_generation: number;
  type: string;
}
type Snap = Snapshot & { prompts: Prompt[] };

/** The reason (or the result) of a call, to compare two instances' answers. */
const outcome = (call: Promise<unknown>) =>
  call.then(
    (result) => ({ result }),
    (error: { reason?: string }) => ({ reason: error.reason }),
  );

describe('cluster: prompt answers and interrupts reach the instance running the turn', () => {
  it(
    'a viewer on B sees A’s approval prompt and approves it on B: the command runs once on A, its result reaches B',
    async () => {
      const c = cluster;
      const [a, b] = [c.daemon(0), c.daemon(1)];
      const cwd = tempDir();
      const victim = join(cwd, 'victim');
      mkdirSync(victim);
      const onA = await a.connect();
      const { session_id } = await onA.call<Snapshot>('session.create', { cwd });
      await onA.call('session.resume', { session_id });
      const viewerB = await b.connect();
      await viewerB.call('session.resume', { session_id });
      const askedB = nextEvent(viewerB, 'approval.request', (e) => e.session_id === session_id, 60_000);
      await onA.call<Ack>('prompt.submit', {
        session_id,
        submission_id: 'rm',
        text: `run: rm -rf ${victim} && echo deleted >> ran.log`,
      });
      const prompt = (await askedB).event as unknown as Prompt;
      expect((await c.lease(session_id))?.owner_epoch).toBe(a.epoch);

      // A viewer arriving on B finds the prompt in its snapshot (read from A, which holds it).
      const lateB = await b.connect();
      const snap = await lateB.call<Snap>('session.resume', { session_id });
      expect(snap.prompts).toEqual([
        expect.objectContaining({
          type: 'approval.request',
          prompt_id: prompt.prompt_id,
          execution_generation: prompt.execution_generation,
        }),
      ]);

      // Wrong answers are refused via B exactly as on A, and change nothing.
      const stale = { session_id, prompt_id: prompt.prompt_id, choice: 'once' };
      const wrongGeneration = { ...stale, execution_generation: prompt.execution_generation + 1 };
      const unknownPrompt = {
        ...stale,
        prompt_id: 'no-such-prompt',
        execution_generation: prompt.execution_generation,
      };
      for (const params of [wrongGeneration, unknownPrompt]) {
        const onOwner = await outcome(onA.call('approval.respond', params));
        expect(await outcome(lateB.call('approval.respond', params))).toEqual(onOwner);
      }
      expect(await outcome(lateB.call('approval.respond', wrongGeneration))).toEqual({
        reason: 'stale_generation',
      });
      expect(existsSync(victim)).toBe(true);

      const completeB = nextEvent(viewerB, 'turn.complete', (e) => e.session_id === session_id, 60_000);
      await expect(
        lateB.call('approval.respond', { ...stale, execution_generation: prompt.execution_generation }),
      ).resolves.toEqual({ status: 'resolved', prompt_id: prompt.prompt_id });
      expect((await completeB).event).toMatchObject({ outcome: 'completed' });
      expect(existsSync(victim)).toBe(false);
      expect(ranLog(cwd)).toEqual(['deleted']);
      const after = await lateB.call<Snap>('session.resume', { session_id });
      const results = after.messages.filter((m) => m.role === 'tool');
      expect(results).toHaveLength(1);
      expect(results[0]!.content).toMatch(/^exit code 0/);
      expect(after.prompts).toEqual([]);
      // A repeat of the answer via B after the turn ended runs nothing again. (The lease was given
      // back when the queue ran empty, so B answers from its own broker: no open prompt.)
      const again = { ...stale, execution_generation: prompt.execution_generation };
      expect(await outcome(lateB.call('approval.respond', again))).toEqual({ reason: 'not_found' });
      expect(ranLog(cwd)).toEqual(['deleted']);
      expect(await c.sql('SELECT id FROM control_requests')).toEqual([]);
    },
    TIMEOUT,
  );

  it(
    'session.interrupt sent to C stops a `run: sleep 30` turn running on A',
    async () => {
      const c = cluster;
      const [a, third] = [c.daemon(0), c.daemon(2)];
      const onA = await a.connect();
      const { session_id } = await onA.call<Snapshot>('session.create', { cwd: tempDir() });
      await onA.call('session.resume', { session_id });
      const started = nextEvent(onA, 'turn.start', (e) => e.session_id === session_id, 60_000);
      const toolRunning = nextEvent(onA, 'tool.start', (e) => e.session_id === session_id, 60_000);
      const ack = await onA.call<Ack>('prompt.submit', {
        session_id,
        submission_id: 'slow',
        text: 'run: sleep 30',
      });
      const generation = (await started).event['execution_generation'] as number;
      await toolRunning;
      expect((await c.lease(session_id))?.owner_epoch).toBe(a.epoch);

      const onC = await third.connect();
      await expect(
        onC.call('session.interrupt', { session_id, execution_generation: generation + 1 }),
      ).rejects.toMatchObject({ reason: 'stale_generation' });
      const done = nextEvent(onA, 'turn.complete', (e) => e.session_id === session_id, 60_000);
      await expect(
        onC.call('session.interrupt', { session_id, execution_generation: generation }),
      ).resolves.toEqual({
        interrupted: true,
      });
      expect((await done).event).toMatchObject({ outcome: 'interrupted' });
      const rows = await c.sql<{ state: string }>('SELECT state FROM admissions WHERE admission_id = $1', [
        ack.admission_id,
      ]);
      expect(rows).toEqual([{ state: 'interrupted' }]);
      // Nothing runs now: an interrupt via C says so, as A would.
      await expect(
        onC.call('session.interrupt', { session_id, execution_generation: generation }),
      ).resolves.toEqual({
        interrupted: false,
      });
    },
    TIMEOUT,
  );

  it(
    'a clarify answer given on C reaches the model of the turn running on A',
    async () => {
      const c = cluster;
      const [a, third] = [c.daemon(0), c.daemon(2)];
      const demo = rig.models[0]!;
      const onA = await a.connect();
      const { session_id } = await onA.call<Snapshot>('session.create', { cwd: tempDir() });
      await onA.call('session.resume', { session_id });
      const asked = nextEvent(onA, 'clarify.request', (e) => e.session_id === session_id, 60_000);
      await onA.call<Ack>('prompt.submit', {
        session_id,
        submission_id: 'ask',
        text: 'ask: which colour? [red|blue]',
      });
      const request = (await asked).event as unknown as Prompt;
      const onC = await third.connect();
      const snap = await onC.call<Snap>('session.resume', { session_id });
      expect(snap.prompts).toEqual([
        expect.objectContaining({ type: 'clarify.request', prompt_id: request.prompt_id }),
      ]);
      const before = chatRequests(demo).length;
      const done = nextEvent(onC, 'turn.complete', (e) => e.session_id === session_id, 60_000);
      await expect(
        onC.call('clarify.respond', {
          session_id,
          prompt_id: request.prompt_id,
          execution_generation: request.execution_generation,
          answer: 'blue',
        }),
      ).resolves.toEqual({ status: 'resolved', prompt_id: request.prompt_id });
      expect((await done).event).toMatchObject({ outcome: 'completed' });
      const requests = chatRequests(demo).slice(before);
      expect(requests).toHaveLength(1);
      expect(lastToolResult(requests[0]!)).toBe('The user answered: blue');
    },
    TIMEOUT,
  );

  it(
    'an owner that does not answer (SIGSTOPped) is owner_unreachable; the call never runs later, and its repeat does',
    async () => {
      const c = cluster;
      const [a, third] = [c.daemon(0), c.daemon(2)];
      const onA = await a.connect();
      const { session_id } = await onA.call<Snapshot>('session.create', { cwd: tempDir() });
      await onA.call('session.resume', { session_id });
      const completes: SessionEvent[] = [];
      onA.onNotification((n) => {
        const e = sessionEvent(n);
        if (e?.session_id === session_id && e.event.type === 'turn.complete') completes.push(e);
      });
      const started = nextEvent(onA, 'turn.start', (e) => e.session_id === session_id, 60_000);
      const toolRunning = nextEvent(onA, 'tool.start', (e) => e.session_id === session_id, 60_000);
      await onA.call<Ack>('prompt.submit', { session_id, submission_id: 'slow', text: 'run: sleep 30' });
      const generation = (await started).event['execution_generation'] as number;
      await toolRunning;
      const onC = await third.connect();
      const interrupt = { session_id, execution_generation: generation };

      a.child.kill('SIGSTOP');
      let refused: unknown;
      try {
        refused = await onC.call('session.interrupt', interrupt).catch((e: unknown) => e);
      } finally {
        a.child.kill('SIGCONT');
      }
      expect(refused).toMatchObject({
        reason: 'owner_unreachable',
        details: { retryable: true, owner_epoch: a.epoch },
      });
      // A round trip through A's relay (a snapshot on C reads A's open prompts) after A woke: its
      // pass skipped the expired interrupt, so the turn still runs.
      await onC.call('session.resume', { session_id });
      expect(completes).toEqual([]);
      const done = nextEvent(onA, 'turn.complete', (e) => e.session_id === session_id, 60_000);
      await expect(onC.call('session.interrupt', interrupt)).resolves.toEqual({ interrupted: true });
      expect((await done).event).toMatchObject({ outcome: 'interrupted' });
    },
    TIMEOUT,
  );
});
