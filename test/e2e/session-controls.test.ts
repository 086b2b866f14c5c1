/**
 * session.reset, session.undo and session.retry over the real daemon, as docs/rpc-methods.md shows
 * them: idempotent by request_id, fenced by the session's turn slot (session_busy while a turn runs),
 * announced to viewers.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import type { DemoModelServer } from '../../src/runtime/demo/server.js';
import { requireBuild } from './cli.js';
import { BACKENDS, nextEvent, type RunningDaemon } from './gateway-harness.js';
import {
  modelConfig,
  quiet,
  tempDir,
  texts,
  turnStarts,
  useSharedRig,
  type Ack,
  type Snapshot,
} from './recovery-harness.js';

beforeAll(requireBuild);
const E2E_TIMEOUT_MS = 120_000;

const said = (text: string) => `Demo model (scripted stand-in): you said: ${text}`;

async function withTurns(client: GatewayClient, ...inputs: string[]): Promise<string> {
  const { session_id } = await client.call<Snapshot>('session.create', { cwd: tempDir() });
  for (const text of inputs) {
    await client.call('prompt.submit', { session_id, submission_id: text, text });
    await quiet(client, session_id);
  }
  return session_id;
}

describe.each(BACKENDS)('session controls on %s', (store) => {
  describe('session.undo and session.retry', () => {
    // One daemon for both cases, a session of their own each.
    const shared = useSharedRig();
    let demo: DemoModelServer;
    let d: RunningDaemon;
    beforeAll(async () => {
      shared.store = store;
      demo = await shared.model();
      d = await shared.daemon({ config: modelConfig(demo) });
    });

    it(
      'undo and retry rewind through the store once per request_id; a retry runs its turn once',
      async () => {
        const client = await d.connect();
        const id = await withTurns(client, 'one', 'two');

        const rewound = nextEvent(client, 'transcript.rewound', (e) => e.session_id === id);
        const undo = { session_id: id, request_id: 'undo-1' };
        expect(await client.call('session.undo', undo)).toEqual({
          session_id: id,
          turns_undone: 1,
          rewound_count: 2,
          target_text: 'two',
          duplicate: false,
        });
        expect((await rewound).event).toMatchObject({ turns_undone: 1, rewound_count: 2 });
        expect(await client.call('session.undo', undo)).toMatchObject({ turns_undone: 1, duplicate: true });
        expect(texts(await client.call<Snapshot>('session.resume', { session_id: id }))).toEqual([
          'one',
          said('one'),
        ]);

        const retry = { session_id: id, request_id: 'retry-1' };
        const first = await client.call<Ack & { text: string; submission_id: string }>(
          'session.retry',
          retry,
        );
        expect(first).toMatchObject({ text: 'one', submission_id: 'retry:retry-1', duplicate: false });
        await quiet(client, id);
        const again = await client.call<Ack>('session.retry', retry);
        expect(again).toMatchObject({
          admission_id: first.admission_id,
          duplicate: true,
          state: 'completed',
        });
        expect(turnStarts(demo, first.admission_id)).toBe(1);
        expect(texts(await client.call<Snapshot>('session.resume', { session_id: id }))).toEqual([
          'one',
          said('one'),
        ]);

        const empty = await withTurns(client);
        await expect(
          client.call('session.retry', { session_id: empty, request_id: 'r' }),
        ).rejects.toMatchObject({
          reason: 'not_found',
        });
        expect(await client.call('session.undo', { session_id: empty, request_id: 'u' })).toMatchObject({
          turns_undone: 0,
        });
      },
      E2E_TIMEOUT_MS,
    );

    it(
      'every control waits for the turn slot: session_busy while a turn runs, then it goes through',
      async () => {
        const client = await d.connect();
        const id = await withTurns(client, 'before');
        demo.hold();
        const called = demo.waitForRequests(demo.requests.length + 1);
        await client.call('prompt.submit', { session_id: id, submission_id: 'slow', text: 'slow' });
        await called;
        for (const method of ['session.reset', 'session.undo', 'session.retry']) {
          await expect(
            client.call(method, { session_id: id, request_id: 'busy' }),
            method,
          ).rejects.toMatchObject({
            reason: 'session_busy',
          });
        }
        demo.release();
        await quiet(client, id);
        expect(texts(await client.call<Snapshot>('session.resume', { session_id: id }))).toEqual([
          'before',
          said('before'),
          'slow',
          said('slow'),
        ]);
        // The same request_id, now that the slot is free: it runs (the refusal changed nothing).
        const announced = nextEvent(client, 'session.reset', (e) => e.session_id === id);
        expect(await client.call('session.reset', { session_id: id, request_id: 'busy' })).toMatchObject({
          session_id: id,
          duplicate: false,
        });
        await announced;
        const snap = await client.call<Snapshot>('session.resume', { session_id: id });
        expect(snap.session_id).toBe(id);
        expect(texts(snap)).toEqual([]);
      },
      E2E_TIMEOUT_MS,
    );
  });
});
