import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConnectionClosedError } from '../../src/surfaces/client/rpc-client.js';
import { BACKENDS, nextEvent, waitForState } from './gateway-harness.js';
import { storeRows } from './store-rows.js';
import {
  admissionOrder,
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

const rig = useRecoveryRig();

describe.each(BACKENDS)('REC-2 a lost acknowledgement after the admission commit on %s', (store) => {
  beforeAll(() => {
    rig.store = store;
  });

  it('answers the retry with the same admission (duplicate) and runs it exactly once', async () => {
    const demo = await rig.model();
    const config = modelConfig(demo);
    let d = await rig.daemon({ config, env: { GATEHOUSE_TEST_FAULTS: 'admission.committed' } });
    let client = await d.connect();
    const { session_id } = await client.call<Snapshot>('session.create', { request_id: 'r', cwd: tempDir() });
    const lost = await client
      .call('prompt.submit', { session_id, submission_id: 's-1', text: 'only once' })
      .catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(ConnectionClosedError);
    await died(d);

    d = await rig.daemon({ home: d.home, config });
    client = await d.connect();
    const retry = await client.call<Ack>('prompt.submit', {
      session_id,
      submission_id: 's-1',
      text: 'only once',
    });
    expect(retry.duplicate).toBe(true);
    const snap = await quiet(client, session_id);
    expect(snap.messages.filter((m) => m.role === 'user').map((m) => m.admission_id)).toEqual([
      retry.admission_id,
    ]);
    expect(turnStarts(demo, retry.admission_id)).toBe(1);
  });
});

describe.each(BACKENDS)(
  'REC-2 a started turn that is not resumed becomes unknown; the queue behind it waits, then runs in FIFO order once on %s',
  (store) => {
    beforeAll(() => {
      rig.store = store;
    });

    type Case = { name: string; faults?: string; first: string; trigger: 'fault' | 'model' | 'tool' };
    const cases: Case[] = [
      { name: 'turn.claimed (fault point)', faults: 'turn.claimed@2', first: 'first turn', trigger: 'fault' },
      { name: 'during the model call (SIGKILL)', first: 'held by the model', trigger: 'model' },
      {
        name: 'while a tool runs (SIGKILL)',
        first: 'run: echo u1 >> ran.log; echo begun; sleep 5',
        trigger: 'tool',
      },
    ];
    it.each(cases)('$name', async ({ faults, first, trigger }) => {
      const demo = await rig.model();
      // REC-7 resumes a turn that stood at a step boundary; max_resumes 1 keeps every crash unknown
      // here, so the queue behind it is seen to wait. A running tool is unknown by default.
      const config = modelConfig(demo, ...(trigger === 'tool' ? [] : ['recovery: {max_resumes: 1}']));
      const cwd = tempDir();
      let d = await rig.daemon({ config, env: faults ? { GATEHOUSE_TEST_FAULTS: faults } : {} });
      let client = await d.connect();
      const { session_id } = await client.call<Snapshot>('session.create', {
        request_id: 'q',
        cwd,
        yolo: true,
      });
      await client.call('session.resume', { session_id });
      const submit = (submission_id: string, text: string) =>
        client.call<Ack>('prompt.submit', { session_id, submission_id, text });

      if (trigger === 'fault') {
        // A warm-up turn is the first claim; holding its model call keeps the queue behind it.
        demo.hold();
        await submit('w0', 'warm-up');
        await demo.waitForRequests(1);
      } else if (trigger === 'model') {
        demo.hold();
      }
      // The command's first output: its process runs, so the tool is recorded as started (`tool.start`
      // comes before the tool's checks and its start record).
      const toolStarted = nextEvent(client, 'tool.output').catch(() => null);
      const u1 = await submit('u1', first);
      if (trigger === 'model') await demo.waitForRequests(1);
      if (trigger === 'tool') await toolStarted;
      const queued = [
        await submit('u2', 'second'),
        await submit('u3', 'run: echo u3 >> ran.log'),
        await submit('u4', 'fourth'),
      ];
      expect(queued.map((a) => a.state)).toEqual(['queued', 'queued', 'queued']);
      if (trigger === 'fault')
        demo.release(); // w0 completes, u1 is claimed: the fault kills the daemon
      else await d.kill();
      await died(d);
      demo.release();
      const startsBefore = turnStarts(demo, u1.admission_id);
      const ranBefore = ranLog(cwd);

      d = await rig.daemon({ home: d.home, config });
      client = await d.connect();
      const snap = await client.call<Snapshot>('session.resume', { session_id });
      expect(snap.state).toBe('unknown');
      expect(snap.pending_admissions.map((a) => [a.submission_id, a.state])).toEqual([
        ['u1', 'unknown'],
        ['u2', 'queued'],
        ['u3', 'queued'],
        ['u4', 'queued'],
      ]);
      // Nothing behind the unknown admission ran, and it was not replayed.
      for (const a of queued) expect(turnStarts(demo, a.admission_id)).toBe(0);
      const unknown = snap.pending_admissions[0]!;
      await expect(
        client.call('prompt.resolve_unknown', {
          session_id,
          admission_id: unknown.admission_id,
          execution_generation: unknown.execution_generation! + 1,
        }),
      ).rejects.toMatchObject({ reason: 'stale_generation' });
      const resolved = await client.call('prompt.resolve_unknown', {
        session_id,
        admission_id: unknown.admission_id,
        execution_generation: unknown.execution_generation,
      });
      expect(resolved).toMatchObject({ resolved: true, outcome: 'interrupted' });
      const done = await quiet(client, session_id);
      expect(done.pending_admissions).toEqual([]);

      expect(turnStarts(demo, u1.admission_id)).toBe(startsBefore);
      for (const a of queued) expect(turnStarts(demo, a.admission_id)).toBe(1);
      const order = admissionOrder(demo).filter((id) => queued.some((a) => a.admission_id === id));
      expect(order).toEqual(queued.map((a) => a.admission_id));
      const users = done.messages.filter((m) => m.role === 'user').map((m) => m.content);
      expect(users.slice(-3)).toEqual(['second', 'run: echo u3 >> ran.log', 'fourth']);
      // The interrupted tool ran at most once (never replayed); u3's tool ran once.
      expect(ranLog(cwd).filter((l) => l === 'u1')).toEqual(ranBefore.filter((l) => l === 'u1'));
      expect(ranLog(cwd).filter((l) => l === 'u3')).toEqual(['u3']);
      // Every tool call the model saw has exactly one result (a dangling one was closed, once).
      for (const m of done.messages)
        for (const call of m.tool_calls ?? [])
          expect(done.messages.filter((r) => r.tool_call_id === call.id)).toHaveLength(1);
    });
  },
);

describe.each(BACKENDS)('REC-3 authority epochs on %s', (store) => {
  beforeAll(() => {
    rig.store = store;
  });

  it('opens a higher epoch at every start, advertises it, and records clean shutdowns', async () => {
    const demo = await rig.model();
    const config = modelConfig(demo);
    let d = await rig.daemon({ config });
    const epochs = [d.epoch];
    await d.kill();
    d = await rig.daemon({ home: d.home, config });
    epochs.push(d.epoch);
    const client = await d.connect();
    const described = await client.call<{ epoch: number }>('runtime.describe');
    expect(described.epoch).toBe(d.epoch);
    const gatewayJson = JSON.parse(readFileSync(d.layout.gatewayJson, 'utf8')) as { epoch: number };
    expect(gatewayJson.epoch).toBe(d.epoch);
    expect(await d.stop()).toBe(0);
    d = await rig.daemon({ home: d.home, config });
    epochs.push(d.epoch);
    await d.kill();
    expect(epochs[1]!).toBeGreaterThan(epochs[0]!);
    expect(epochs[2]!).toBeGreaterThan(epochs[1]!);
    const db = await storeRows(d, store);
    const rows = await db.all<{ epoch: number; clean_shutdown_at: string | null }>(
      'SELECT epoch, clean_shutdown_at FROM authority_epochs ORDER BY epoch',
    );
    await db.close();
    expect(rows.map((r) => [r.epoch, r.clean_shutdown_at !== null])).toEqual([
      [epochs[0], false],
      [epochs[1], true],
      [epochs[2], false],
    ]);
  });
});

describe.each(BACKENDS)('REC-6 graceful stop on %s', (store) => {
  beforeAll(() => {
    rig.store = store;
  });

  it('a turn longer than drain_timeout_s is left to recovery: the process exits, the turn is unknown, never replayed', async () => {
    const demo = await rig.model();
    const config = modelConfig(demo, 'drain_timeout_s: 1');
    const cwd = tempDir();
    let d = await rig.daemon({ config });
    let client = await d.connect();
    const { session_id } = await client.call<Snapshot>('session.create', { cwd, yolo: true });
    await client.call('session.resume', { session_id });
    // Its first output: the command runs, so the tool is recorded as started. (`tool.start` comes
    // before the tool's checks and its start record: a stop between the two finds a tool that never
    // ran, which recovery rightly resumes.)
    const started = nextEvent(client, 'tool.output');
    const long = await client.call<Ack>('prompt.submit', {
      session_id,
      submission_id: 'long',
      text: 'run: echo begun; sleep 30',
    });
    await started;
    d.child.kill('SIGTERM');
    await waitForState(d.url, 'draining');
    expect(await d.stop()).toBe(0);

    d = await rig.daemon({ home: d.home, config });
    client = await d.connect();
    const snap = await client.call<Snapshot>('session.resume', { session_id });
    expect(snap.pending_admissions).toMatchObject([{ admission_id: long.admission_id, state: 'unknown' }]);
    expect(turnStarts(demo, long.admission_id)).toBe(1);
    const db = await storeRows(d, store);
    const first = (await db.get<{ clean_shutdown_at: string | null }>(
      'SELECT clean_shutdown_at FROM authority_epochs ORDER BY epoch LIMIT 1',
    ))!;
    await db.close();
    expect(first.clean_shutdown_at).not.toBeNull();
  });
});
