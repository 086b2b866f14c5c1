/**
 * The commands of docs/scheduling.md exactly as it shows them (the ids it writes as <session id> and
 * <job id> filled in), against a real daemon: gatehouse jobs add|list|run-now|pause|resume|remove,
 * gatehouse status, and /schedule and /jobs in gatehouse chat; and the refusals they meet.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isOneLineError, requireBuild, runCli } from './cli.js';
import { startDaemon, type RunningDaemon } from './gateway-harness.js';
import { tempDir } from './recovery-harness.js';
import { jobUntil } from './jobs-harness.js';

beforeAll(requireBuild);
const daemons: RunningDaemon[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
});

const DOC = readFileSync(new URL('../../docs/scheduling.md', import.meta.url), 'utf8');

/** The doc's command lines that start with `gatehouse jobs` or `gatehouse status`, split like a shell. */
function documented(...prefixes: string[]): string[][] {
  return DOC.split('\n')
    .filter((line) => prefixes.some((prefix) => line.startsWith(prefix)))
    .map((line) => [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!).slice(1));
}

describe('docs/scheduling.md, as written', () => {
  it('runs every gatehouse jobs command it shows, and gatehouse status lists the job', async () => {
    const d = await startDaemon();
    daemons.push(d);
    const client = await d.connect();
    const { session_id } = await client.call<{ session_id: string }>('session.create', {
      request_id: 's',
      cwd: tempDir(),
    });
    // (The delegation commands of the same page are run by test/e2e/delegations.test.ts.)
    const commands = documented('gatehouse jobs ', 'gatehouse status');
    expect(commands.map((c) => c.slice(0, 2).join(' '))).toEqual([
      'jobs add',
      'jobs add',
      'jobs list',
      'jobs run-now',
      'jobs pause',
      'jobs resume',
      'jobs remove',
      'status',
    ]);
    let jobId = '';
    const fill = (args: string[]) =>
      args.map((a) => (a === '<session' ? session_id : a === '<job' ? jobId : a)).filter((a) => a !== 'id>');
    const outputs: string[] = [];
    for (const args of commands) {
      const run = await runCli(d.home, fill(args));
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      outputs.push(run.stdout);
      if (args[1] === 'add' && jobId === '') jobId = /Added (job_[0-9a-f]{12})/.exec(run.stdout)![1]!;
      // The status comes last, after the job was removed: show it once more before the removal.
      if (args[1] === 'resume') {
        await jobUntil(client, jobId, (j) => j.last_run?.outcome === 'completed');
        // gateway.json is rewritten once the settled run is read back: read the status until it shows it.
        const line = new RegExp(
          `${jobId} inbox: cron 0 8 \\* \\* \\* \\(Europe/Berlin\\), active, next \\S+, last \\S+ completed`,
        );
        let status = await runCli(d.home, ['status']);
        for (let tries = 0; tries < 40 && !line.test(status.stdout); tries++) {
          await new Promise((r) => setTimeout(r, 250));
          status = await runCli(d.home, ['status']);
        }
        expect(status.stdout).toMatch(line);
      }
    }
    const [added, second, list, runNow, paused, resumed, removed] = outputs;
    expect(added).toContain(`cron 0 8 * * * (Europe/Berlin) → session ${session_id}  [active]`);
    expect(second).toMatch(/every 3600s → a new session per run {2}\[active\]/);
    expect(list).toContain(`${jobId} inbox  cron 0 8 * * * (Europe/Berlin)`);
    expect(list).toContain('never run; text: Summarize my inbox');
    expect(runNow).toMatch(new RegExp(`^${jobId} runs now in session ${session_id} \\(admission `));
    expect(paused).toBe(`Paused ${jobId}.\n`);
    expect(resumed).toBe(`Resumed ${jobId}.\n`);
    expect(removed).toBe(`Removed ${jobId}.\n`);
    const { jobs } = await client.call<{ jobs: { job_id: string }[] }>('jobs.list', {});
    expect(jobs.map((j) => j.job_id)).not.toContain(jobId);
    // The run-now run reached the session once.
    const snap = await client.call<{ messages: { role: string; content: string }[] }>('session.resume', {
      session_id,
    });
    expect(snap.messages.filter((m) => m.role === 'user' && m.content === 'Summarize my inbox')).toHaveLength(
      1,
    );
  }, 120_000);

  it('runs its /schedule and /jobs chat line', async () => {
    const d = await startDaemon();
    daemons.push(d);
    const line = /^printf '(.*)' \| gatehouse chat$/m.exec(DOC)![1]!.replace(/\\n/g, '\n');
    const run = await runCli(d.home, ['chat'], { input: line });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /\(scheduled job_[0-9a-f]{12} {2}cron 0 8 \* \* \* \(Europe\/Berlin\) {2}\[active\]/,
    );
    expect(run.stdout).toMatch(
      /job_[0-9a-f]{12} {2}cron 0 8 \* \* \* \(Europe\/Berlin\) {2}\[active\] {2}next \S+; never run; "Summarize my inbox"/,
    );
  }, 60_000);

  it('refuses a bad schedule and a home channel in one line, adding nothing', async () => {
    const d = await startDaemon();
    daemons.push(d);
    const client = await d.connect();
    const { session_id } = await client.call<{ session_id: string }>('session.create', { request_id: 's' });
    const bad = await runCli(d.home, [
      'jobs',
      'add',
      '--cron',
      '0 8 * *',
      '--session',
      session_id,
      '--text',
      'x',
    ]);
    expect(bad.code).not.toBe(0);
    expect(isOneLineError(bad.stderr)).toBe(true);
    expect(bad.stderr).toContain("has 4 fields; a job's cron has five");
    const home = await client
      .call('jobs.add', { request_id: 'h', every_s: 60, session_id, text: 'x', deliver: 'home_channel' })
      .catch((e: unknown) => e as { reason: string; message: string });
    expect(home).toMatchObject({ reason: 'invalid_params' });
    expect((home as { message: string }).message).toContain('"session" or "home:<platform>"');
    const { jobs } = await client.call<{ jobs: unknown[] }>('jobs.list', {});
    expect(jobs).toEqual([]);
  }, 60_000);

  it('refuses the test clock outside tests: the daemon does not start', async () => {
    const failed = await startDaemon({
      env: { GATEHOUSE_TEST_CLOCK: '/nonexistent', NODE_ENV: 'production' },
    }).catch((e: unknown) => e);
    expect(String(failed)).toMatch(
      /GATEHOUSE_TEST_CLOCK is a test-only clock control and is refused outside tests/,
    );
  }, 60_000);
});
