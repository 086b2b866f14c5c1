/**
 * Issue 26 item 4 through the real daemon and the real `gatehouse chat`: after a SIGKILL while a
 * tool runs, the session's turn is `unknown`. The chat that resumes it says so and what to do, a
 * message typed meanwhile says it waits, and `/resolve` settles the turn as the dashboard's
 * Resolve does (prompt.resolve_unknown), after which the queued message runs.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { BACKENDS, nextEvent } from './gateway-harness.js';
import { modelConfig, quiet, tempDir, useRecoveryRig, type Snapshot } from './recovery-harness.js';

const rig = useRecoveryRig();

describe.each(BACKENDS)('an unknown turn in gatehouse chat on %s', (store) => {
  beforeAll(() => {
    rig.store = store;
  });

  it('shows the state and offers /resolve, which lets the queue run', { timeout: 120_000 }, async () => {
    const demo = await rig.model();
    const config = modelConfig(demo);
    let d = await rig.daemon({ config });
    let client = await d.connect();
    const { session_id } = await client.call<Snapshot>('session.create', {
      request_id: 'q',
      cwd: tempDir(),
      yolo: true,
    });
    await client.call('session.resume', { session_id });
    // Its first output: the command runs, so the tool is recorded as started (never resumed).
    const running = nextEvent(client, 'tool.output');
    await client.call('prompt.submit', {
      session_id,
      submission_id: 'u1',
      text: 'run: echo begun; sleep 30',
    });
    await running;
    await d.kill();

    d = await rig.daemon({ home: d.home, config });
    client = await d.connect();
    const before = await quiet(client, session_id);
    expect(before.pending_admissions.map((a) => a.state)).toEqual(['unknown']);

    const run = await runCli(d.home, ['chat', '--resume', session_id], {
      input: 'hello after the crash\n/resolve\n',
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      'gatehouse: a turn ("run: echo begun; sleep 30") was running when the gateway stopped',
    );
    expect(run.stdout).toContain('/resolve to settle it as interrupted');
    expect(run.stdout).toContain('(queued behind the turn whose effect is unknown');
    expect(run.stdout).toContain('(resolved: that turn is settled as interrupted; queued messages run now)');
    expect(run.stdout).toContain('you said: hello after the crash');

    const after = await quiet(client, session_id);
    expect(after.pending_admissions).toEqual([]);
  });
});
