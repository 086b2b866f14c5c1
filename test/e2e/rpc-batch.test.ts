/**
 * JSON-RPC 2.0 batches over a real WebSocket to the real daemon (issue 12, item 12): each request
 * of a batch is authorised on its own (a worker-adoption ticket's batch gets permission_denied for
 * session.create and a result for session.list), answers come back as one array in request order,
 * a batch of notifications gets no reply, and `[]` or an oversized batch is one -32600.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { MAX_BATCH_SIZE } from '../../src/protocol/jsonrpc.js';
import { requestTicket } from '../../src/surfaces/control/client.js';
import { requireBuild } from './cli.js';
import {
  BACKENDS,
  dropTestSchemas,
  startDaemon,
  type Backend,
  type RunningDaemon,
} from './gateway-harness.js';
import { tempDir } from './seed-fixture.js';

type Answer = {
  id: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; data: { reason: string; details?: unknown } };
};

let daemon: RunningDaemon | null = null;
beforeAll(requireBuild);
/** The store of the daemons this file starts; each describe.each(BACKENDS) block sets it. */
let backend: Backend = 'sqlite';
afterEach(async () => {
  await daemon?.stop();
  daemon = null;
  await dropTestSchemas();
});

/** A raw socket with a real ticket; `next()` resolves with the next frame the server sent, parsed. */
async function rawViewer(d: RunningDaemon, purpose: 'interactive' | 'worker-adoption') {
  const { ticket } = await requestTicket(d.layout.controlSocket, purpose);
  const ws = new WebSocket(`${d.url.replace(/^http/, 'ws')}/api/ws`, [
    'gatehouse.v1',
    `gatehouse-ticket.${ticket}`,
  ]);
  const frames: unknown[] = [];
  const waiters: ((frame: unknown) => void)[] = [];
  ws.on('message', (data: Buffer) => {
    const frame = JSON.parse(data.toString('utf8')) as unknown;
    // Server notifications (session events) are not answers; keep only replies.
    if (!Array.isArray(frame) && (frame as { method?: unknown }).method !== undefined) return;
    const waiter = waiters.shift();
    if (waiter) waiter(frame);
    else frames.push(frame);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    send: (value: unknown) => ws.send(JSON.stringify(value)),
    next: () =>
      new Promise<unknown>((resolve) => {
        if (frames.length > 0) resolve(frames.shift());
        else waiters.push(resolve);
      }),
    close: () => ws.close(),
  };
}

const req = (id: number, method: string, params: unknown = {}) => ({ jsonrpc: '2.0', id, method, params });

describe.each(BACKENDS)('JSON-RPC batches on %s', (store) => {
  beforeAll(() => {
    backend = store;
  });

  describe('issue 12 item 12: JSON-RPC batches through the daemon', () => {
    it('answers a batch with an array in order; each request is authorised on its own', async () => {
      daemon = await startDaemon({ store: backend });
      const cwd = tempDir();
      const owner = await rawViewer(daemon, 'interactive');
      owner.send([
        req(1, 'session.create', { cwd }),
        { jsonrpc: '2.0', method: 'session.list', params: {} },
        req(2, 'session.list', { scope: 'stored' }),
        req(3, 'session.list', { colour: 'red' }),
        1,
      ]);
      const answers = (await owner.next()) as Answer[];
      expect(answers.map((a) => a.id)).toEqual([1, 2, 3, null]);
      expect(answers[0]!.result).toHaveProperty('session_id');
      const listed = answers[1]!.result!['sessions'] as { session_id: string }[];
      expect(listed.map((s) => s.session_id)).toContain(answers[0]!.result!['session_id']);
      expect(answers[2]!.error).toMatchObject({ code: -32602, data: { reason: 'invalid_params' } });
      expect(answers[3]!.error).toMatchObject({ code: -32600, data: { reason: 'invalid_request' } });

      const worker = await rawViewer(daemon, 'worker-adoption');
      worker.send([req(7, 'session.create', { cwd }), req(8, 'session.list', {})]);
      const refused = (await worker.next()) as Answer[];
      expect(refused.map((a) => a.id)).toEqual([7, 8]);
      expect(refused[0]!.error).toMatchObject({ data: { reason: 'permission_denied' } });
      expect(refused[1]!.result).toHaveProperty('sessions');
      owner.close();
      worker.close();
    });

    it('a batch of notifications gets no reply; [] and an oversized batch are one -32600', async () => {
      daemon = await startDaemon({ store: backend });
      const viewer = await rawViewer(daemon, 'interactive');
      viewer.send([
        { jsonrpc: '2.0', method: 'session.list', params: {} },
        { jsonrpc: '2.0', method: 'no.such.method' },
      ]);
      // Frames are handled in order: had the batch owed a reply, it would come before this one.
      viewer.send(req(1, 'session.list', {}));
      expect(await viewer.next()).toMatchObject({ id: 1, result: { sessions: [] } });

      viewer.send([]);
      const empty = (await viewer.next()) as Answer;
      expect(Array.isArray(empty)).toBe(false);
      expect(empty).toMatchObject({ id: null, error: { code: -32600, data: { reason: 'invalid_request' } } });

      viewer.send(Array.from({ length: MAX_BATCH_SIZE + 1 }, (_, i) => req(i + 1, 'session.list', {})));
      expect(await viewer.next()).toMatchObject({
        id: null,
        error: {
          code: -32600,
          data: { reason: 'invalid_request', details: { max_batch_size: MAX_BATCH_SIZE } },
        },
      });
      viewer.close();
    });
  });
});
