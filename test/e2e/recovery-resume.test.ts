/**
 * REC-7 step resume, end to end: the real daemon SIGKILLed (by a fault point or by the test) at
 * each step boundary of a turn, restarted, and the turn either resumed at its boundary under a new
 * generation (`turn.resumed`) and completed exactly once, or, where its tool was running, `unknown`.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { BACKENDS, nextEvent } from './gateway-harness.js';
import {
  died,
  modelConfig,
  quiet,
  ranLog,
  tempDir,
  turnStarts,
  useRecoveryRig,
  type Ack,
  type Snapshot,
} from './recovery-harness.js';
import type { DemoModelServer } from '../../src/runtime/demo/server.js';

const rig = useRecoveryRig();

type Pending = Snapshot['pending_admissions'][number] & { detail: string | null; resumes: number };
interface Prompt {
  type: string;
  prompt_id: string;
  execution_generation: number;
}
type Snap = Omit<Snapshot, 'pending_admissions'> & { pending_admissions: Pending[]; prompts: Prompt[] };

/** The events the session's hub buffered in this epoch (the resume happens before anyone attaches). */
async function bufferedEvents(
  client: GatewayClient,
  session_id: string,
  epoch: number,
): Promise<{ type: string; [k: string]: unknown }[]> {
  const replay = await client.call<{ events: { event: { type: string } }[] }>('session.events.since', {
    session_id,
    epoch,
    after_seq: 0,
  });
  return replay.events.map((e) => e.event);
}

/** The last tool message of the last model request of an admission. */
function lastToolResult(demo: DemoModelServer, admissionId: string): string {
  const request = demo.requests.filter((r) => r.headers['x-gatehouse-admission'] === admissionId).at(-1);
  const tools = (request?.body?.messages ?? []).filter((m) => m.role === 'tool');
  const content = tools.at(-1)?.content;
  return typeof content === 'string' ? content : '';
}

async function crashedTurn(options: {
  faults?: string;
  text: string;
  extra?: string[];
  yolo?: boolean;
  hold?: boolean;
}) {
  const demo = await rig.model();
  const cwd = tempDir();
  const config = modelConfig(demo, ...(options.extra ?? []));
  const d = await rig.daemon({
    config,
    env: options.faults ? { GATEHOUSE_TEST_FAULTS: options.faults } : {},
  });
  const client = await d.connect();
  const { session_id } = await client.call<Snapshot>('session.create', {
    cwd,
    yolo: options.yolo ?? true,
  });
  await client.call('session.resume', { session_id });
  if (options.hold) demo.hold();
  const flushesBefore = await logFlushes(client);
  const ack = await client.call<Ack>('prompt.submit', {
    session_id,
    submission_id: 'one',
    text: options.text,
  });
  return { demo, cwd, config, d, client, session_id, ack, flushesBefore };
}

/**
 * Restarts the crashed turn's home and waits until its queue is quiet: nothing left pending, one
 * `turn.resumed` at `step`, the input stored once. The turn's stored messages.
 */
async function resumedOnce(
  first: Awaited<ReturnType<typeof crashedTurn>>,
  step: string,
): Promise<Snap['messages']> {
  const d = await rig.daemon({ home: first.d.home, config: first.config });
  const client = await d.connect();
  const done = (await quiet(client, first.session_id)) as unknown as Snap;
  expect(done.pending_admissions).toEqual([]);
  const resumed = (await bufferedEvents(client, first.session_id, d.epoch)).filter(
    (e) => e.type === 'turn.resumed',
  );
  expect(resumed).toMatchObject([{ admission_id: first.ack.admission_id, step, resumes: 1 }]);
  const mine = done.messages.filter((m) => m.admission_id === first.ack.admission_id);
  expect(mine.filter((m) => m.role === 'user')).toHaveLength(1);
  return mine;
}

/** The group commit's log flushes so far (runtime.describe); on PostgreSQL, its batches. */
async function logFlushes(client: GatewayClient): Promise<number> {
  return (await client.call<{ storage: { log_flushes: number } }>('runtime.describe', {})).storage
    .log_flushes;
}

describe.each(BACKENDS)('REC-7 on %s', (store) => {
  beforeAll(() => {
    rig.store = store;
  });

  describe('REC-7 a turn killed at a step boundary resumes there and completes exactly once', () => {
    type Case = { point: string; text: string; step: string; starts: number; ran: number };
    const cases: Case[] = [
      // Claimed, no model call yet: the model is called once, after the restart.
      { point: 'turn.claimed', text: 'hello after a crash', step: 'model', starts: 1, ran: 0 },
      // The answer was streaming and never stored: the model call is repeated (its cost twice).
      { point: 'model.streaming', text: 'streamed twice', step: 'model', starts: 2, ran: 0 },
      // The tool call is stored, its process never started: it runs once, after the restart.
      { point: 'tool.recorded', text: 'run: echo once >> ran.log', step: 'tool', starts: 1, ran: 1 },
      // Killed inside settlement: the final answer rolled back; the model is asked again.
      { point: 'settle.transaction', text: 'settled once', step: 'model', starts: 2, ran: 0 },
      // Every tool result stored, the next model call streaming: that call is repeated with the
      // stored result, and the tool does not run again.
      { point: 'model.streaming', text: 'run: echo once >> ran.log', step: 'model', starts: 1, ran: 1 },
    ];
    it.each(cases)('$point: $text', async ({ point, text, step, starts, ran }) => {
      const first = await crashedTurn({ faults: point, text });
      await died(first.d);
      const mine = await resumedOnce(first, step);
      // Exactly one final answer; every tool call has exactly one result.
      expect(mine.filter((m) => m.role === 'assistant' && !m.tool_calls?.length)).toHaveLength(1);
      for (const m of mine)
        for (const call of m.tool_calls ?? [])
          expect(mine.filter((r) => r.tool_call_id === call.id)).toHaveLength(1);
      expect(turnStarts(first.demo, first.ack.admission_id)).toBe(starts);
      expect(ranLog(first.cwd)).toEqual(ran === 1 ? ['once'] : []);
      if (ran === 1) expect(lastToolResult(first.demo, first.ack.admission_id)).toMatch(/^exit code 0/);
    });
  });

  it('a claim answered before its log flush (docs/decisions.md) survives a SIGKILL: the turn resumes, completes once', async () => {
    const first = await crashedTurn({ text: 'claimed lazily, then killed', hold: true });
    await first.demo.waitForRequests(1);
    // The model was called on a claim no flush has covered: the admission's is the only one (on
    // SQLite the group counts its flushes; on PostgreSQL every batch, the claim's with
    // synchronous_commit off, counts as one).
    if (store === 'sqlite') expect(await logFlushes(first.client)).toBe(first.flushesBefore + 1);
    await first.d.kill();
    first.demo.release();
    const mine = await resumedOnce(first, 'model');
    expect(mine.filter((m) => m.role === 'assistant')).toHaveLength(1);
    expect(turnStarts(first.demo, first.ack.admission_id)).toBe(2);
  });

  it.skipIf(store !== 'sqlite')(
    'with recovery.max_resumes: 1 (a started turn never resumes) the claim is flushed before the model is called',
    async () => {
      const first = await crashedTurn({
        text: 'claimed durably',
        hold: true,
        extra: ['recovery: {max_resumes: 1}'],
      });
      await first.demo.waitForRequests(1);
      // The admission's flush and the claim's.
      expect(await logFlushes(first.client)).toBe(first.flushesBefore + 2);
      first.demo.release();
    },
  );

  describe('REC-7 a tool that was running at the kill', () => {
    const running = 'run: echo ran >> ran.log; sleep 3';
    it.each(['tool.running', 'tool.result'])(
      '%s: unknown by default (tool_running), never run again',
      async (point) => {
        const text = point === 'tool.result' ? 'run: echo ran >> ran.log' : running;
        const first = await crashedTurn({ faults: point, text });
        await died(first.d);
        const d = await rig.daemon({ home: first.d.home, config: first.config });
        const client = await d.connect();
        const snap = (await quiet(client, first.session_id)) as unknown as Snap;
        expect(snap.pending_admissions).toMatchObject([{ state: 'unknown' }]);
        expect(snap.pending_admissions[0]!.detail).toMatch(/^tool_running:/);
        await new Promise((resolve) => setTimeout(resolve, 3500));
        expect(ranLog(first.cwd)).toEqual(['ran']);
      },
    );

    it('recovery.running_tool: close closes the call with an honest result and the model goes on', async () => {
      const first = await crashedTurn({
        faults: 'tool.running',
        text: running,
        extra: ['recovery: {running_tool: close}'],
      });
      await died(first.d);
      const d = await rig.daemon({ home: first.d.home, config: first.config });
      const client = await d.connect();
      const done = (await quiet(client, first.session_id)) as unknown as Snap;
      expect(done.pending_admissions).toEqual([]);
      const events = await bufferedEvents(client, first.session_id, d.epoch);
      const resumed = events.find((e) => e.type === 'turn.resumed');
      expect(resumed).toMatchObject({ step: 'model' });
      expect(resumed?.['closed_tool_call_id']).toEqual(expect.any(String));
      expect(lastToolResult(first.demo, first.ack.admission_id)).toMatch(
        /^\[gateway restarted\].*effect is unknown/,
      );
      await new Promise((resolve) => setTimeout(resolve, 3500));
      expect(ranLog(first.cwd)).toEqual(['ran']);
    });

    it('the next turn, killed after its claim and before it closed that call, resumes and closes it', async () => {
      // Turn one dies once its tool ran, its result not stored: unknown, its call left open.
      const first = await crashedTurn({ faults: 'tool.result', text: 'run: echo ran >> ran.log' });
      await died(first.d);
      // The owner resolves it; turn two's claim stores its input after that open call, and the
      // daemon dies before turn two repairs the transcript.
      const second = await rig.daemon({
        home: first.d.home,
        config: first.config,
        env: { GATEHOUSE_TEST_FAULTS: 'turn.claimed' },
      });
      const owner = await second.connect();
      const [unknown] = (await quiet(owner, first.session_id)).pending_admissions;
      await owner.call('prompt.resolve_unknown', {
        session_id: first.session_id,
        admission_id: unknown!.admission_id,
        execution_generation: unknown!.execution_generation,
      });
      const two = await owner.call<Ack>('prompt.submit', {
        session_id: first.session_id,
        submission_id: 'two',
        text: 'hello after the repair',
      });
      await died(second);
      const d = await rig.daemon({ home: first.d.home, config: first.config });
      const client = await d.connect();
      const done = (await quiet(client, first.session_id)) as unknown as Snap;
      expect(done.pending_admissions).toEqual([]);
      const resumed = (await bufferedEvents(client, first.session_id, d.epoch)).filter(
        (e) => e.type === 'turn.resumed',
      );
      expect(resumed).toMatchObject([{ admission_id: two.admission_id, step: 'model', resumes: 1 }]);
      // Turn one's call has one result, the honest one; turn two answered once, after it.
      const call = done.messages.find(
        (m) => m.admission_id === first.ack.admission_id && m.tool_calls?.length,
      )?.tool_calls?.[0];
      const results = done.messages.filter((m) => m.tool_call_id === call?.id);
      expect(results).toHaveLength(1);
      expect(results[0]!.content).toMatch(/^\[interrupted by a gateway stop\]/);
      const answers = done.messages.filter(
        (m) => m.admission_id === two.admission_id && m.role === 'assistant' && !m.tool_calls?.length,
      );
      expect(answers).toHaveLength(1);
      expect(turnStarts(first.demo, two.admission_id)).toBe(1);
      expect(ranLog(first.cwd)).toEqual(['ran']);
    });
  });

  describe('REC-7 limits on resuming', () => {
    it('the recovery.max_resumes-th consecutive crash of one turn makes it unknown (max_resumes)', async () => {
      const first = await crashedTurn({
        faults: 'turn.claimed',
        text: 'crashes twice',
        extra: ['recovery: {max_resumes: 2}'],
      });
      await died(first.d);
      // The resumed turn dies at the same point again.
      await rig.dyingDaemon({
        home: first.d.home,
        config: first.config,
        env: { GATEHOUSE_TEST_FAULTS: 'turn.claimed' },
      });
      const d = await rig.daemon({ home: first.d.home, config: first.config });
      const client = await d.connect();
      const snap = (await quiet(client, first.session_id)) as unknown as Snap;
      expect(snap.pending_admissions).toMatchObject([{ state: 'unknown', resumes: 1 }]);
      expect(snap.pending_admissions[0]!.detail).toMatch(/^max_resumes:/);
      expect(turnStarts(first.demo, first.ack.admission_id)).toBe(0);
    });

    it('a turn older than recovery.auto_continue_freshness_s at restart is unknown (stale), not resumed', async () => {
      const first = await crashedTurn({
        text: 'held, then stale',
        extra: ['recovery: {auto_continue_freshness_s: 1}'],
        hold: true,
      });
      await first.demo.waitForRequests(1);
      await first.d.kill();
      first.demo.release();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const d = await rig.daemon({ home: first.d.home, config: first.config });
      const client = await d.connect();
      const snap = (await quiet(client, first.session_id)) as unknown as Snap;
      expect(snap.pending_admissions).toMatchObject([{ state: 'unknown' }]);
      expect(snap.pending_admissions[0]!.detail).toMatch(/^stale:/);
      expect(turnStarts(first.demo, first.ack.admission_id)).toBe(1);
    });

    it('a turn past limits.turn_timeout_s is cut and settles failed / turn_timeout; viewers are told', async () => {
      const demo = await rig.model();
      const d = await rig.daemon({ config: modelConfig(demo, 'limits: {turn_timeout_s: 1}') });
      const client = await d.connect();
      const { session_id } = await client.call<Snapshot>('session.create', { cwd: tempDir(), yolo: true });
      await client.call('session.resume', { session_id });
      const complete = nextEvent(client, 'turn.complete');
      const settled = nextEvent(client, 'admission.settled');
      await client.call<Ack>('prompt.submit', { session_id, submission_id: 'slow', text: 'run: sleep 20' });
      expect((await complete).event).toMatchObject({
        outcome: 'failed',
        error: { reason: 'turn_timeout' },
      });
      expect((await settled).event).toMatchObject({ outcome: 'failed' });
      // The session goes on with its next turn.
      const next = nextEvent(client, 'turn.complete');
      await client.call<Ack>('prompt.submit', { session_id, submission_id: 'next', text: 'after the cut' });
      expect((await next).event).toMatchObject({ outcome: 'completed' });
    });
  });

  describe('REC-7 prompts survive a crash with their prompt id', () => {
    it('approval: two viewers, SIGKILL, restart; a new viewer approves the same prompt; the command runs once', async () => {
      const demo = await rig.model();
      const cwd = tempDir();
      const victim = join(cwd, 'victim');
      mkdirSync(victim);
      writeFileSync(join(victim, 'file.txt'), 'owned by the test');
      const config = modelConfig(demo);
      let d = await rig.daemon({ config });
      const a = await d.connect();
      const b = await d.connect();
      const { session_id } = await a.call<Snapshot>('session.create', { cwd });
      await a.call('session.resume', { session_id });
      await b.call('session.resume', { session_id });
      const seenA = nextEvent(a, 'approval.request');
      const seenB = nextEvent(b, 'approval.request');
      const ack = await a.call<Ack>('prompt.submit', {
        session_id,
        submission_id: 'rm',
        text: `run: rm -rf ${victim} && echo deleted >> ran.log`,
      });
      const [asked, askedB] = [(await seenA).event, (await seenB).event];
      expect(askedB['prompt_id']).toBe(asked['prompt_id']);
      await d.kill();
      expect(existsSync(victim)).toBe(true);

      d = await rig.daemon({ home: d.home, config });
      const c = await d.connect();
      const recreated = nextEvent(c, 'approval.request').catch(() => null);
      const snap = await c.call<Snap>('session.resume', { session_id });
      const prompt =
        snap.prompts.find((p) => p.prompt_id === asked['prompt_id']) ??
        ((await recreated)?.event as unknown as Prompt | undefined);
      expect(prompt?.prompt_id).toBe(asked['prompt_id']);
      expect(prompt!.execution_generation).toBeGreaterThan(Number(asked['execution_generation']));
      // The answer bound to the old generation is refused as stale; nothing ran.
      await expect(
        c.call('approval.respond', {
          session_id,
          prompt_id: asked['prompt_id'],
          execution_generation: asked['execution_generation'],
          choice: 'once',
        }),
      ).rejects.toMatchObject({ reason: 'stale_generation' });
      expect(existsSync(victim)).toBe(true);
      const complete = nextEvent(c, 'turn.complete');
      await expect(
        c.call('approval.respond', {
          session_id,
          prompt_id: prompt!.prompt_id,
          execution_generation: prompt!.execution_generation,
          choice: 'once',
        }),
      ).resolves.toMatchObject({ status: 'resolved' });
      expect((await complete).event).toMatchObject({ outcome: 'completed' });
      expect(existsSync(victim)).toBe(false);
      expect(ranLog(cwd)).toEqual(['deleted']);
      expect(lastToolResult(demo, ack.admission_id)).toMatch(/^exit code 0/);
      const done = (await quiet(c, session_id)) as unknown as Snap;
      const results = done.messages.filter((m) => m.role === 'tool' && m.admission_id === ack.admission_id);
      expect(results).toHaveLength(1);
      expect(results[0]!.content).toMatch(/^exit code 0/);
    });

    it('clarify: asked, SIGKILL, restart, answered under the same prompt id; the answer reaches the model', async () => {
      const first = await crashedTurn({ text: 'ask: which colour? [red|blue]', yolo: false });
      const asked = (await nextEvent(first.client, 'clarify.request')).event;
      await first.d.kill();
      const d = await rig.daemon({ home: first.d.home, config: first.config });
      const client = await d.connect();
      const recreated = nextEvent(client, 'clarify.request').catch(() => null);
      const snap = await client.call<Snap>('session.resume', { session_id: first.session_id });
      const prompt =
        snap.prompts.find((p) => p.prompt_id === asked['prompt_id']) ??
        ((await recreated)?.event as unknown as Prompt | undefined);
      expect(prompt?.prompt_id).toBe(asked['prompt_id']);
      const complete = nextEvent(client, 'turn.complete');
      await client.call('clarify.respond', {
        session_id: first.session_id,
        prompt_id: prompt!.prompt_id,
        execution_generation: prompt!.execution_generation,
        answer: 'blue',
      });
      expect((await complete).event).toMatchObject({ outcome: 'completed' });
      expect(lastToolResult(first.demo, first.ack.admission_id)).toBe('The user answered: blue');
    });
  });
});
