/**
 * Durable steer through the real daemon on both stores (issue 28, docs/scheduling.md "Steering a
 * running turn"): a steer admitted while a turn runs is applied at the turn's next model-call
 * boundary and stored there; one that arrives after the last model call runs as the next turn; one
 * admitted before a SIGKILL is applied once by the resumed turn; one applied just before a SIGKILL
 * is replayed from the transcript, never applied twice.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { runCli } from './cli.js';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, nextEvent, type RunningDaemon } from './gateway-harness.js';
import {
  died,
  modelConfig,
  quiet,
  tempDir,
  useRecoveryRig,
  useSharedRig,
  type Snapshot,
} from './recovery-harness.js';
import { ADMISSION_HEADER } from '../../src/runtime/runner.js';
import type { DemoModelServer } from '../../src/runtime/demo/server.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';

const rig = useRecoveryRig();

interface SteerAck {
  admission_id: string;
  state: string;
  duplicate: boolean;
  mode: string;
  applied_to: string | null;
}
type Message = Snapshot['messages'][number] & { steer_id?: string };

/** The `session.steer` request docs/scheduling.md shows ("Steering a running turn"), as written. */
const DOC = readFileSync(new URL('../../docs/scheduling.md', import.meta.url), 'utf8');
const DOCUMENTED = JSON.parse(/^\{.*"method": "session\.steer".*\}$/m.exec(DOC)![0]) as {
  method: string;
  params: { session_id: string; submission_id: string; text: string };
};

/** A tool call that waits until the test creates `go` in the session's cwd (a condition, not a sleep). */
const WAIT_FOR_GO = 'run: while [ ! -e go ]; do sleep 0.05; done; echo first';

/** The user messages (with their text) of every model request of an admission, in order. */
function userTexts(demo: DemoModelServer, admissionId: string): string[][] {
  return demo.requests
    .filter((r) => r.headers[ADMISSION_HEADER] === admissionId)
    .map((r) => (r.body?.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content)));
}

function steer(client: GatewayClient, session_id: string, submission_id: string, text: string) {
  return client.call<SteerAck>('session.steer', { session_id, submission_id, text });
}

/** A session of its own (and a client attached to it) on `d`. */
async function session(d: RunningDaemon) {
  const client = await d.connect();
  const cwd = tempDir();
  const { session_id } = await client.call<Snapshot>('session.create', { cwd, yolo: true });
  await client.call('session.resume', { session_id });
  return { client, cwd, session_id };
}

describe.each(BACKENDS)('durable steer on %s', (store) => {
  beforeAll(() => {
    rig.store = store;
  });

  describe('on one daemon (a session of their own each), SIGKILLed by the last case', () => {
    const shared = useSharedRig();
    let demo: DemoModelServer;
    let d: RunningDaemon;
    beforeAll(async () => {
      shared.store = store;
      demo = await shared.model();
      d = await shared.daemon({ config: modelConfig(demo) });
    });

    it('is applied at the next model-call boundary of the running turn, stored there, exactly once; after the last call it is the next turn', async () => {
      const { client, cwd, session_id } = await session(d);

      // A turn in its tool step: the steer waits for the boundary after the tool, before the next call.
      const toolRuns = nextEvent(client, 'tool.start', (e) => e.session_id === session_id);
      const turn = await client.call<{ admission_id: string }>('prompt.submit', {
        session_id,
        submission_id: 'deploy',
        text: WAIT_FOR_GO,
      });
      await toolRuns;
      // The documented request, its session id replaced by this session's.
      const ack = await client.call<SteerAck>(DOCUMENTED.method, { ...DOCUMENTED.params, session_id });
      expect(DOCUMENTED.params).toMatchObject({ submission_id: 'steer-1', text: 'actually, use staging' });
      expect(ack).toMatchObject({ state: 'queued', mode: 'steer', applied_to: null, duplicate: false });
      const applied = nextEvent(client, 'steer.applied', (e) => e.session_id === session_id);
      writeFileSync(join(cwd, 'go'), '');
      expect((await applied).event).toMatchObject({
        admission_id: turn.admission_id,
        steer_id: ack.admission_id,
        text: 'actually, use staging',
      });
      let snap = await quiet(client, session_id);
      const mine = (snap.messages as Message[]).filter((m) => m.admission_id === turn.admission_id);
      expect(mine.map((m) => [m.role, m.steer_id ?? null])).toEqual([
        ['user', null],
        ['assistant', null],
        ['tool', null],
        ['user', ack.admission_id],
        ['assistant', null],
      ]);
      expect(mine[3]!.content).toBe('actually, use staging');
      expect(mine[4]!.content).toContain('you said: actually, use staging');
      // The model saw it in the call after the tool, once; it never ran as a turn of its own.
      expect(userTexts(demo, turn.admission_id).at(-1)).toEqual([WAIT_FOR_GO, 'actually, use staging']);
      expect(userTexts(demo, ack.admission_id)).toEqual([]);
      // Its submission_id names it: a repeat finds it applied, and applies nothing again.
      expect(await steer(client, session_id, 'steer-1', 'actually, use staging')).toMatchObject({
        admission_id: ack.admission_id,
        state: 'completed',
        applied_to: turn.admission_id,
        duplicate: true,
      });

      // From the chat, as docs/chat.md shows it: `/steer <text>` while a turn runs.
      rmSync(join(cwd, 'go'));
      const toolRunsAgain = nextEvent(client, 'tool.start', (e) => e.session_id === session_id);
      const second = await client.call<{ admission_id: string }>('prompt.submit', {
        session_id,
        submission_id: 'deploy-2',
        text: WAIT_FOR_GO,
      });
      await toolRunsAgain;
      const steered = nextEvent(client, 'admission.queued', (e) => e.event['mode'] === 'steer');
      const fromChat = nextEvent(
        client,
        'steer.applied',
        (e) => e.event['admission_id'] === second.admission_id,
      );
      const chat = runCli(d.home, ['chat', '--resume', session_id], { input: '/steer from the chat\n' });
      await steered;
      writeFileSync(join(cwd, 'go'), '');
      expect((await fromChat).event).toMatchObject({ text: 'from the chat' });
      const ran = await chat;
      expect(ran.code).toBe(0);
      expect(ran.stdout).toContain('(steer saved: the running turn gets it before its next model call');
      await quiet(client, session_id);

      // A steer that arrives while the turn's last model call answers: no boundary is left, so it
      // runs as the next turn's input.
      demo.hold();
      const before = demo.requests.length;
      const called = demo.waitForRequests(before + 1);
      const last = await client.call<{ admission_id: string }>('prompt.submit', {
        session_id,
        submission_id: 'hello',
        text: 'hello',
      });
      await called;
      const late = await steer(client, session_id, 'steer-2', 'and say goodbye');
      demo.release();
      snap = await quiet(client, session_id);
      const lateTurn = (snap.messages as Message[]).filter((m) => m.admission_id === late.admission_id);
      expect(lateTurn.map((m) => [m.role, m.content])).toEqual([
        ['user', 'and say goodbye'],
        ['assistant', expect.stringContaining('you said: and say goodbye')],
      ]);
      expect(
        (snap.messages as Message[]).filter((m) => m.admission_id === last.admission_id && m.steer_id),
      ).toEqual([]);
      expect(await steer(client, session_id, 'steer-2', 'and say goodbye')).toMatchObject({
        state: 'completed',
        applied_to: null,
        duplicate: true,
      });
      // One submission_id is one request: the same id as a prompt is a conflict, not a second input.
      await expect(
        client.call('prompt.submit', { session_id, submission_id: 'steer-2', text: 'and say goodbye' }),
      ).rejects.toMatchObject({ reason: 'admission_conflict' });
    }, 90_000);

    it('a steer admitted before a SIGKILL is applied once by the resumed turn', async () => {
      // The last case of this block: it SIGKILLs the shared daemon and starts it again.
      const first = await session(d);
      demo.hold();
      const called = demo.waitForRequests(demo.requests.length + 1);
      const turn = await first.client.call<{ admission_id: string }>('prompt.submit', {
        session_id: first.session_id,
        submission_id: 'deploy',
        text: 'deploy the service',
      });
      await called;
      const ack = await steer(first.client, first.session_id, 'steer-1', 'actually, use staging');
      await d.kill();
      demo.release();

      const again = await shared.daemon({ home: d.home, config: modelConfig(demo) });
      const client = await again.connect();
      const snap = await quiet(client, first.session_id);
      expect(snap.pending_admissions).toEqual([]);
      const steers = (snap.messages as Message[]).filter((m) => m.steer_id === ack.admission_id);
      expect(steers).toMatchObject([{ admission_id: turn.admission_id, content: 'actually, use staging' }]);
      expect(userTexts(demo, turn.admission_id).at(-1)).toEqual([
        'deploy the service',
        'actually, use staging',
      ]);
      expect(userTexts(demo, ack.admission_id)).toEqual([]);
      expect(await steer(client, first.session_id, 'steer-1', 'actually, use staging')).toMatchObject({
        state: 'completed',
        applied_to: turn.admission_id,
      });
    }, 90_000);
  });

  it('a steer applied just before a SIGKILL is replayed from the transcript, never applied twice', async () => {
    const demo = await rig.model();
    const config = modelConfig(demo);
    const d0 = await rig.daemon({ config, env: { GATEHOUSE_TEST_FAULTS: 'steer.applied' } });
    const c0 = await d0.connect();
    const cwd = tempDir();
    const { session_id } = await c0.call<Snapshot>('session.create', { cwd, yolo: true });
    await c0.call('session.resume', { session_id });
    const toolRuns = nextEvent(c0, 'tool.start', (e) => e.session_id === session_id);
    const turn = await c0.call<{ admission_id: string }>('prompt.submit', {
      session_id,
      submission_id: 'deploy',
      text: WAIT_FOR_GO,
    });
    await toolRuns;
    const ack = await steer(c0, session_id, 'steer-1', 'actually, use staging');
    writeFileSync(join(cwd, 'go'), '');
    await died(d0);
    const requestsBefore = demo.requests.length;

    const d = await rig.daemon({ home: d0.home, config });
    const client = await d.connect();
    const snap = await quiet(client, session_id);
    expect(snap.pending_admissions).toEqual([]);
    const mine = (snap.messages as Message[]).filter((m) => m.admission_id === turn.admission_id);
    expect(mine.filter((m) => m.steer_id === ack.admission_id)).toHaveLength(1);
    expect(mine.at(-1)!.content).toContain('you said: actually, use staging');
    // The first run never asked the model after the steer; the resumed run did, with it once.
    const resumed = userTexts(demo, turn.admission_id).slice(-1);
    expect(demo.requests.length).toBeGreaterThan(requestsBefore);
    expect(resumed).toEqual([[WAIT_FOR_GO, 'actually, use staging']]);
  }, 90_000);
});
