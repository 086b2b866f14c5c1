/**
 * Seed verification, prompts and reattachment (issue 4, e2e cases 2 and 3; LOC-7, LOC-11, LOC-12):
 * approvals and clarify questions outlive every viewer, and a new viewer answers them; missed events
 * are replayed exactly; interrupts and cancellations are fenced by generation and admission.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMISSION_HEADER } from '../../src/runtime/runner.js';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import {
  BACKENDS,
  nextEvent,
  sessionEvent,
  startDaemon,
  useSharedDaemon,
  type SessionEvent,
} from './gateway-harness.js';
import {
  chatRequests,
  createAttached,
  lastToolResult,
  tempDir,
  useFixture,
  type ChatBody,
  type Snapshot,
} from './seed-fixture.js';

const fx = useFixture();

/** The chat-completion requests of one admission: the shared daemon's model answers other cases too. */
function requestsOf(demo: DemoModelServer, admission_id: string): ChatBody[] {
  return demo.requests
    .filter((r) => r.path === '/v1/chat/completions' && r.body !== null)
    .filter((r) => r.headers[ADMISSION_HEADER] === admission_id)
    .map((r) => r.body as unknown as ChatBody);
}

describe.each(BACKENDS)('prompts, replay and interrupts on %s', (store) => {
  beforeAll(() => {
    fx.store = store;
  });

  // One daemon for the cases that do not restart it, a session (and viewers) of their own each.
  let demo: DemoModelServer | null = null;
  afterAll(() => demo?.close());
  const daemon = useSharedDaemon(async () => {
    demo = await startDemoModel();
    return startDaemon({ store, config: `model: {base_url: ${demo.baseUrl}, model: gatehouse-demo}` });
  });

  describe('LOC-7/LOC-10 same-agent reattachment with a pending approval', () => {
    it('survives both viewers closing; a new viewer approves and the command runs exactly as asked', async () => {
      const d = await daemon();
      const cwd = tempDir();
      const victim = join(cwd, 'victim');
      mkdirSync(join(victim, 'nested'), { recursive: true });
      writeFileSync(join(victim, 'nested', 'file.txt'), 'doomed');
      mkdirSync(join(cwd, 'keep'));
      writeFileSync(join(cwd, 'keep', 'file.txt'), 'kept');

      const first = await d.connect();
      const second = await d.connect();
      const session_id = await createAttached(first, { cwd });
      await second.call('session.resume', { session_id });
      const asked = [first, second].map((c) => nextEvent(c, 'approval.request'));
      const { admission_id } = await first.call<{ admission_id: string }>('prompt.submit', {
        session_id,
        submission_id: 'rm',
        text: `run: rm -rf ${victim} && echo removed-victim`,
      });
      const [request] = await Promise.all(asked);
      await first.close();
      await second.close();
      expect(existsSync(victim)).toBe(true);

      const third = await d.connect();
      const snapshot = await third.call<Snapshot>('session.resume', { session_id });
      expect(snapshot.prompts).toHaveLength(1);
      const prompt = snapshot.prompts[0]!;
      expect(prompt).toMatchObject({
        type: 'approval.request',
        prompt_id: request!.event['prompt_id'],
        execution_generation: request!.event['execution_generation'],
      });
      expect(prompt.command).toContain('rm -rf');
      const answer = (over: Record<string, unknown>) =>
        third.call('approval.respond', {
          session_id,
          prompt_id: prompt.prompt_id,
          execution_generation: prompt.execution_generation,
          choice: 'once',
          ...over,
        });
      await expect(answer({ prompt_id: 'no-such-prompt' })).rejects.toMatchObject({ reason: 'not_found' });
      await expect(answer({ execution_generation: prompt.execution_generation + 1 })).rejects.toMatchObject({
        reason: 'stale_generation',
      });
      expect(existsSync(victim)).toBe(true);

      const done = nextEvent(third, 'turn.complete');
      await expect(answer({})).resolves.toMatchObject({ status: 'resolved' });
      expect((await done).event).toMatchObject({ outcome: 'completed' });
      await expect(answer({})).resolves.toMatchObject({ status: 'already_resolved' });

      expect(existsSync(victim)).toBe(false);
      expect(readdirSync(cwd)).toEqual(['keep']);
      expect(readdirSync(join(cwd, 'keep'))).toEqual(['file.txt']);

      const after = await third.call<Snapshot>('session.resume', { session_id });
      expect(after.prompts).toEqual([]);
      expect(after.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(after.messages[2]!.content).toContain('removed-victim');
      const requests = requestsOf(demo!, admission_id);
      expect(requests).toHaveLength(2);
      expect(lastToolResult(requests[1]!)).toContain('removed-victim');
    });
  });

  describe('LOC-7/LOC-10 clarify answered after every viewer left', () => {
    it('a new viewer sees the question and its answer reaches the next model request', async () => {
      const d = await daemon();
      const viewer = await d.connect();
      const session_id = await createAttached(viewer, { cwd: tempDir() });
      const asked = nextEvent(viewer, 'clarify.request');
      const { admission_id } = await viewer.call<{ admission_id: string }>('prompt.submit', {
        session_id,
        submission_id: 'ask',
        text: 'ask: which colour? [red|blue]',
      });
      const request = await asked;
      await viewer.close();

      const next = await d.connect();
      const snapshot = await next.call<Snapshot>('session.resume', { session_id });
      expect(snapshot.prompts).toEqual([
        expect.objectContaining({
          type: 'clarify.request',
          prompt_id: request.event['prompt_id'],
          execution_generation: request.event['execution_generation'],
          question: 'which colour?',
          choices: ['red', 'blue'],
        }),
      ]);
      const done = nextEvent(next, 'turn.complete');
      await next.call('clarify.respond', {
        session_id,
        prompt_id: snapshot.prompts[0]!.prompt_id,
        execution_generation: snapshot.prompts[0]!.execution_generation,
        answer: 'blue',
      });
      expect((await done).event).toMatchObject({ outcome: 'completed' });
      const requests = requestsOf(demo!, admission_id);
      expect(requests).toHaveLength(2);
      expect(lastToolResult(requests[1]!)).toContain('blue');
      expect(lastToolResult(requests[0]!)).not.toContain('blue');
    });
  });

  describe('LOC-11 replay of missed events', () => {
    it('a reconnecting viewer gets exactly the events it missed; an old epoch needs a snapshot', async () => {
      const home = join(tempDir(), 'home');
      let d = await fx.daemon({ home });
      const watcher = await d.connect();
      const leaver = await d.connect();
      const session_id = await createAttached(watcher, { cwd: tempDir() });
      const seen: SessionEvent[] = [];
      watcher.onNotification((n) => {
        const e = sessionEvent(n);
        if (e) seen.push(e);
      });
      await runTurnOn(watcher, session_id, 'one', 'first turn');
      const cursor = await leaver.call<Snapshot>('session.resume', { session_id });
      await leaver.close();

      const settled = nextEvent(watcher, 'admission.settled');
      await watcher.call('prompt.submit', { session_id, submission_id: 'two', text: 'run: echo missed' });
      await settled;
      const missed = seen.filter((e) => e.seq > cursor.last_seq);
      expect(missed.map((e) => e.event.type)).toContain('tool.complete');

      const back = await d.connect();
      const replay = await back.call<{ epoch: number; events: { seq: number; event: unknown }[] }>(
        'session.events.since',
        { session_id, epoch: cursor.epoch, after_seq: cursor.last_seq },
      );
      expect(replay.events).toEqual(missed.map((e) => ({ seq: e.seq, event: e.event })));
      expect(replay.epoch).toBe(cursor.epoch);

      await d.stop();
      fx.forget(d);
      d = await fx.daemon({ home });
      expect(d.epoch).toBeGreaterThan(cursor.epoch);
      const afterRestart = await d.connect();
      await expect(
        afterRestart.call('session.events.since', {
          session_id,
          epoch: cursor.epoch,
          after_seq: cursor.last_seq,
        }),
      ).rejects.toMatchObject({ reason: 'snapshot_required' });
    });
  });

  async function runTurnOn(
    client: Parameters<typeof nextEvent>[0],
    session_id: string,
    id: string,
    text: string,
  ): Promise<void> {
    const settled = nextEvent(client, 'admission.settled');
    await client.call('prompt.submit', { session_id, submission_id: id, text });
    await settled;
  }

  describe('LOC-12 interrupt and cancel', () => {
    it('interrupts the running generation only, and a cancelled queued admission never runs', async () => {
      const d = await daemon();
      const client = await d.connect();
      const cwd = tempDir();
      const session_id = await createAttached(client, { cwd });
      const started = nextEvent(client, 'turn.start');
      const toolRunning = nextEvent(client, 'tool.start');
      await client.call('prompt.submit', { session_id, submission_id: 'slow', text: 'run: sleep 30' });
      const generation = (await started).event['execution_generation'] as number;
      await toolRunning;

      const queued = await client.call<{ admission_id: string }>('prompt.submit', {
        session_id,
        submission_id: 'never',
        text: 'run: touch never-ran.txt',
      });
      const cancelledEvent = nextEvent(
        client,
        'admission.settled',
        (e) => e.event['admission_id'] === queued.admission_id,
      );
      await expect(
        client.call('prompt.cancel', { session_id, admission_id: queued.admission_id }),
      ).resolves.toMatchObject({ cancelled: true, state: 'cancelled' });
      expect((await cancelledEvent).event).toMatchObject({ outcome: 'cancelled' });

      await expect(
        client.call('session.interrupt', { session_id, execution_generation: generation + 1 }),
      ).rejects.toMatchObject({ reason: 'stale_generation' });
      const done = nextEvent(client, 'turn.complete');
      await expect(
        client.call('session.interrupt', { session_id, execution_generation: generation }),
      ).resolves.toEqual({ interrupted: true });
      expect((await done).event).toMatchObject({ outcome: 'interrupted' });

      const snapshot = await client.call<Snapshot>('session.resume', { session_id });
      expect(snapshot.running).toBeNull();
      expect(snapshot.pending_admissions).toEqual([]);
      expect(snapshot.messages.map((m) => m.content)).not.toContain('run: touch never-ran.txt');
      expect(existsSync(join(cwd, 'never-ran.txt'))).toBe(false);
      // Every request the shared model received, this case's and the others'.
      const texts = JSON.stringify(chatRequests(demo!));
      expect(texts).not.toContain('never-ran');
    });
  });

  describe('LOC-12 interrupting a turn that waits for approval', () => {
    it('closes the prompt, never runs the command, and a late answer is already_resolved', async () => {
      const d = await daemon();
      const client = await d.connect();
      const cwd = tempDir();
      const victim = join(cwd, 'victim');
      mkdirSync(victim);
      const session_id = await createAttached(client, { cwd });
      const asked = nextEvent(client, 'approval.request');
      await client.call('prompt.submit', { session_id, submission_id: 'rm', text: `run: rm -rf ${victim}` });
      const request = (await asked).event;
      const generation = request['execution_generation'] as number;
      const settled = nextEvent(client, 'approval.settled');
      const done = nextEvent(client, 'turn.complete');
      await expect(
        client.call('session.interrupt', { session_id, execution_generation: generation }),
      ).resolves.toEqual({ interrupted: true });
      expect((await settled).event).toMatchObject({ prompt_id: request['prompt_id'] });
      expect((await done).event).toMatchObject({ outcome: 'interrupted' });

      const snapshot = await client.call<Snapshot>('session.resume', { session_id });
      expect(snapshot.prompts).toEqual([]);
      expect(snapshot.state).toBe('idle');
      await expect(
        client.call('approval.respond', {
          session_id,
          prompt_id: request['prompt_id'],
          execution_generation: generation,
          choice: 'once',
        }),
      ).resolves.toMatchObject({ status: 'already_resolved' });
      expect(existsSync(victim)).toBe(true);
    });
  });
});
