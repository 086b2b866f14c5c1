/**
 * The agent schedules a job itself (issue 28, docs/scheduling.md "From the agent"), through the real
 * daemon on both stores: the demo model calls `schedule_job`, a human approves it (in a yolo
 * session too), and the job then fires on the test clock into the session; a denial or a schedule
 * the gateway cannot read adds nothing; `list_jobs` and `remove_job` see only the session's jobs.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { BACKENDS, nextEvent, startDaemon, useSharedDaemon, type SessionEvent } from './gateway-harness.js';
import { jobUntil, runsIn, settledAt, TestClock, type Job } from './jobs-harness.js';
import { tempDir } from './recovery-harness.js';
import { chatRequests, createAttached, lastToolResult } from './seed-fixture.js';
import { requireBuild } from './cli.js';

/** docs/scheduling.md's "From the agent": the tool call it shows and the approval it says is asked. */
const section = readFileSync(new URL('../../docs/scheduling.md', import.meta.url), 'utf8')
  .split('## From the agent')[1]!
  .split('\n## ')[0]!;
const block = (lang: string) =>
  section
    .split('```' + lang + '\n')[1]!
    .split('```')[0]!
    .trim();
const DOC_CALL = JSON.parse(block('json')) as Record<string, unknown>;
const DOC_APPROVAL = block('text');

const T0 = '2026-03-02T08:00:30.000Z';
const minute = (m: number) => `2026-03-02T08:${String(m).padStart(2, '0')}:00.000Z`;
const after = (m: number) => `2026-03-02T08:${String(m).padStart(2, '0')}:05.000Z`;

interface ListedJob extends Job {
  name: string | null;
  text: string;
  schedule_text: string;
  target: { kind: string; session_id?: string };
}

let demo: DemoModelServer;
beforeAll(async () => {
  requireBuild();
  demo = await startDemoModel({ host: '127.0.0.1', port: 0, record: true });
});
afterAll(() => demo.close());

/** Submits `call: <tool> <args>` and resolves with the approval it raises, or null if the turn ended first. */
async function callTool(
  client: GatewayClient,
  sessionId: string,
  id: string,
  tool: string,
  args: Record<string, unknown>,
): Promise<{ asked: SessionEvent | null; done: Promise<SessionEvent> }> {
  const done = nextEvent(client, 'turn.complete', (e) => e.session_id === sessionId);
  const asked = nextEvent(client, 'approval.request', (e) => e.session_id === sessionId);
  await client.call('prompt.submit', {
    session_id: sessionId,
    submission_id: id,
    text: `call: ${tool} ${JSON.stringify(args)}`,
  });
  const first = await Promise.race([asked, done.then(() => null)]);
  asked.catch(() => undefined);
  return { asked: first, done };
}

async function answer(client: GatewayClient, asked: SessionEvent, choice: 'once' | 'deny'): Promise<void> {
  await client.call('approval.respond', {
    session_id: asked.session_id,
    prompt_id: asked.event['prompt_id'],
    execution_generation: asked.event['execution_generation'],
    choice,
  });
}

/** What the model was told the last tool returned. */
const told = (): string => lastToolResult(chatRequests(demo).at(-1)!);

const jobsOf = async (client: GatewayClient): Promise<ListedJob[]> =>
  (await client.call<{ jobs: ListedJob[] }>('jobs.list', {})).jobs;

describe.each(BACKENDS)('the agent schedules jobs through the jobs toolset on %s', (store) => {
  const clock = new TestClock(tempDir(), T0);
  const daemon = useSharedDaemon(() =>
    startDaemon({
      store,
      config: `model: {base_url: ${JSON.stringify(demo.baseUrl)}, model: gatehouse-demo}`,
      env: clock.env(),
    }),
  );
  const session = (client: GatewayClient, yolo = false) =>
    createAttached(client, { cwd: tempDir(), toolsets: ['terminal', 'clarify', 'jobs'], yolo });

  it('schedule_job asks a human even in a yolo session; once approved, the job fires into the session on the clock', async () => {
    const client = await (await daemon()).connect();
    const sessionId = await session(client, true);
    const { asked, done } = await callTool(client, sessionId, 'schedule', 'schedule_job', DOC_CALL);
    expect(DOC_CALL).toEqual({ cron: '* * * * *', text: 'minute check', name: 'check' });
    expect(asked?.event).toMatchObject({ kind: 'edit', choices: ['once', 'deny'] });
    expect(asked!.event['command']).toBe(DOC_APPROVAL);
    await answer(client, asked!, 'once');
    expect((await done).event).toMatchObject({ outcome: 'completed' });
    expect(told()).toMatch(/^Scheduled job_[0-9a-f]{12} \(check\): cron \* \* \* \* \* \(UTC\) \[active\]/);

    // The owner sees it like any job of theirs: it targets this session and runs its text.
    const job = (await jobsOf(client)).find((j) => j.target.session_id === sessionId)!;
    expect(job).toMatchObject({ name: 'check', text: 'minute check', state: 'active', next_run: minute(1) });
    clock.set(after(1));
    const fired = await jobUntil(client, job.job_id, settledAt(minute(1)));
    expect(fired.last_run!.outcome).toBe('completed');
    expect(await runsIn(client, sessionId, 'minute check')).toEqual([fired.last_run!.admission_id]);
  });

  it('a denial, or a schedule the gateway cannot read, adds no job; the model is told why', async () => {
    const client = await (await daemon()).connect();
    const sessionId = await session(client);
    const before = (await jobsOf(client)).length;

    const denied = await callTool(client, sessionId, 'denied', 'schedule_job', { every_s: 60, text: 'no' });
    expect(denied.asked).not.toBeNull();
    await answer(client, denied.asked!, 'deny');
    await denied.done;
    expect(told()).toBe('The user denied this. No job was scheduled.');

    const bad = await callTool(client, sessionId, 'bad-cron', 'schedule_job', {
      cron: '61 * * * *',
      text: 'x',
    });
    expect(bad.asked).toBeNull();
    expect(told()).toMatch(
      /^cron "61 \* \* \* \*" in time zone UTC is not valid: .* No job was scheduled\.$/,
    );

    const two = await callTool(client, sessionId, 'two', 'schedule_job', {
      every_s: 60,
      at: '2026-03-03T08:00:00Z',
      text: 'x',
    });
    expect(two.asked).toBeNull();
    expect(told()).toBe(
      'Give exactly one of `cron` (five fields, with an optional `tz`), `every_s` (seconds) and `at` (an ISO instant). No job was scheduled.',
    );
    expect(await jobsOf(client)).toHaveLength(before);
  });

  it("list_jobs and remove_job reach only the session's own jobs; a removal is approved first", async () => {
    const client = await (await daemon()).connect();
    const mine = await session(client);
    const other = await session(client);
    const { job } = await client.call<{ job: Job }>('jobs.add', {
      request_id: `other-${store}`,
      every_s: 3600,
      session_id: other,
      text: 'not yours',
    });
    const scheduled = await callTool(client, mine, 'later', 'schedule_job', {
      at: '2026-03-03T08:00:00Z',
      text: 'tomorrow',
    });
    await answer(client, scheduled.asked!, 'once');
    await scheduled.done;
    const own = (await jobsOf(client)).find((j) => j.target.session_id === mine)!;

    await (
      await callTool(client, mine, 'list', 'list_jobs', {})
    ).done;
    expect(told()).toBe(
      `${own.job_id}: once at 2026-03-03T08:00:00.000Z [active]; next run 2026-03-03T08:00:00.000Z; not run yet; text: tomorrow`,
    );

    const foreign = await callTool(client, mine, 'foreign', 'remove_job', { job_id: job.job_id });
    expect(foreign.asked).toBeNull();
    expect(told()).toBe(
      `This session has no job ${job.job_id} (list_jobs shows its jobs). Nothing was removed.`,
    );

    const removal = await callTool(client, mine, 'remove', 'remove_job', { job_id: own.job_id });
    expect(removal.asked!.event['command']).toMatch(new RegExp(`^remove_job ${own.job_id}: once at `));
    await answer(client, removal.asked!, 'once');
    await removal.done;
    expect(told()).toBe(`Removed ${own.job_id}; it will not run again.`);
    const left = (await jobsOf(client)).map((j) => j.job_id);
    expect(left).toContain(job.job_id);
    expect(left).not.toContain(own.job_id);
  });
});
