/**
 * Home channels (issue 28, SPEC CTX-1, docs/scheduling.md "Home channels") through the real daemon
 * on both stores, with its Telegram adapter on the loopback Bot API stand-in and the jobs on the
 * test-only clock: a local session's context names the connected platforms and the home channel; a
 * job with `deliver: home:telegram` puts each run's answer in that chat exactly once, also when the
 * daemon is SIGKILLed while the send is under way; a home channel that is not configured is refused.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { recoveredReplyText } from '../../src/domain/messaging/recovery.js';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import { RpcCallError, type GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { BACKENDS, resumeUntil } from './gateway-harness.js';
import { jobUntil, runsIn, settledAt, TestClock, type Job } from './jobs-harness.js';
import { useTelegramDaemon } from './telegram-fixture.js';

/** docs/scheduling.md's "Home channels": its config, the context lines it shows, its jobs.add call. */
const section = readFileSync(join(import.meta.dirname, '../../docs/scheduling.md'), 'utf8')
  .split('## Home channels')[1]!
  .split('\n## ')[0]!;
const block = (lang: string) => section.split('```' + lang + '\n')[1]!.split('```')[0]!;
const DOC_YAML = block('yaml').trimEnd().split('\n');
const DOC_CONTEXT = block('text').trimEnd().split('\n');
const DOC_ADD = JSON.parse(block('json')) as { params: Record<string, unknown> };

const HOME_CHAT = 4242;
const T0 = '2026-03-02T08:00:30.000Z';
const minute = (m: number) => `2026-03-02T08:${String(m).padStart(2, '0')}:00.000Z`;
const after = (m: number) => `2026-03-02T08:${String(m).padStart(2, '0')}:05.000Z`;
const said = (text: string) => `${DEMO_LABEL}: you said: ${text}`;
const tempDir = () => mkdtempSync(join(tmpdir(), 'gh-home-'));

type Snapshot = { session_id: string; pending_admissions: unknown[]; messages: { role: string }[] };

describe.each(BACKENDS)('home channels on %s', { timeout: 120_000 }, (store) => {
  const tg = useTelegramDaemon({ store, yaml: DOC_YAML });
  const clock = new TestClock(tempDir(), T0);

  async function client(): Promise<GatewayClient> {
    if (tg.daemon === null) await tg.start(clock.env());
    return tg.daemon!.connect();
  }

  it("a local session's context names the connected platforms and the home channel", async () => {
    const c = await client();
    const { session_id } = await c.call<Snapshot>('session.create', { request_id: 'ctx', cwd: tempDir() });
    await c.call('prompt.submit', { session_id, submission_id: 'ctx-1', text: 'context probe' });
    await resumeUntil<Snapshot>(
      c,
      session_id,
      (s) => s.pending_admissions.length === 0 && s.messages.length > 1,
    );
    const prompt = JSON.parse(tg.requestTexts('context probe')) as { role: string; content: string }[];
    expect(prompt[0]!.role).toBe('system');
    expect(prompt[0]!.content).toContain(DOC_CONTEXT.join('\n'));
  });

  it('a job delivering to the home channel is refused for a platform without one, and nothing is added', async () => {
    const c = await client();
    const { session_id } = await c.call<Snapshot>('session.create', {
      request_id: 'refused',
      cwd: tempDir(),
    });
    const before = (await c.call<{ jobs: Job[] }>('jobs.list', {})).jobs.length;
    const error = await c
      .call('jobs.add', {
        request_id: 'no-home',
        every_s: 60,
        session_id,
        text: 'x',
        deliver: 'home:slack',
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcCallError);
    expect((error as RpcCallError).reason).toBe('no_home_channel');
    expect((error as RpcCallError).code).toBe(-32027);
    expect((await c.call<{ jobs: Job[] }>('jobs.list', {})).jobs.length).toBe(before);
  });

  it('each run is delivered to the Telegram home channel exactly once, across a SIGKILL during the send', async () => {
    const { standIn } = tg;
    let c = await client();
    const { session_id } = await c.call<Snapshot>('session.create', { request_id: 'home', cwd: tempDir() });
    // The documented call, on this test's session.
    const { job } = await c.call<{ job: Job & { deliver: string } }>('jobs.add', {
      ...DOC_ADD.params,
      session_id,
    });
    expect(job.deliver).toBe('home:telegram');
    const delivered = (m: number) => `report (scheduled ${minute(m)}):\n\n${said('home report')}`;

    // The run's answer is on the ledger and its send is under way when the daemon dies.
    standIn.holdSends((payload) => payload.chat_id === HOME_CHAT);
    clock.set(after(1));
    await standIn.waitForHeld((call) => call.payload.chat_id === HOME_CHAT);
    await tg.kill();
    await standIn.whenNoneHeld();
    standIn.releaseSends();
    expect(tg.repliesTo(HOME_CHAT)).toEqual([]);

    c = await client();
    await tg.waitForText(HOME_CHAT, /Recovered reply/);
    const fired = await jobUntil(c, job.job_id, settledAt(minute(1)));
    expect(fired.last_run!.outcome).toBe('completed');

    // The next minute goes to the chat as it is, and the first is not sent again.
    clock.set(after(2));
    await tg.waitForText(HOME_CHAT, /08:02:00/);
    await jobUntil(c, job.job_id, settledAt(minute(2)));
    expect(tg.repliesTo(HOME_CHAT)).toEqual([recoveredReplyText(delivered(1)), delivered(2)]);
    // Each minute ran once: the answer came from the ledger, not from a second turn.
    expect(await runsIn(c, session_id, 'home report')).toHaveLength(2);
    expect(tg.asked('home report')).toBe(2);
  });
});
