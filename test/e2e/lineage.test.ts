/**
 * Seed 001's lineage verification (LIN-2, LIN-3), through the real daemon: three separate daemon
 * processes on one home. The first drives a real reset (session.reset) and a real compression
 * (session.compress, summarised by the demo model), then is SIGKILLed after durable queued
 * admissions; a fork row and a copied foreign receipt are planted in the database. Cold
 * daemons keep the reset's empty history, the compressed history, policy and cwd (checked in the
 * model's actual prompt), admission identities and unknown-state blocking; the planted cases stay
 * paused and unclaimed; a further restart runs nothing twice.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { plantFork, tamperReceipt } from '../../scripts/torture/tamper.js';
import { SUMMARY_MARKER } from '../../src/runtime/context/compress.js';
import type { DemoModelServer } from '../../src/runtime/demo/server.js';
import { ADMISSION_HEADER } from '../../src/runtime/runner.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { BACKENDS, nextEvent } from './gateway-harness.js';
import { storeRows } from './store-rows.js';
import {
  modelConfig,
  quiet,
  tempDir,
  texts,
  turnStarts,
  useRecoveryRig,
  type Ack,
  type Snapshot,
} from './recovery-harness.js';

const rig = useRecoveryRig();
const E2E_TIMEOUT_MS = 180_000;

/** The messages of the model request that opened the turn of `admissionId`. */
function promptOf(demo: DemoModelServer, admissionId: string): { role: string; content: string }[] {
  const request = demo.requests.find((r) => r.headers[ADMISSION_HEADER] === admissionId);
  if (!request) throw new Error(`no model request for ${admissionId}`);
  return request.body!.messages as { role: string; content: string }[];
}

const submit = (client: GatewayClient, session_id: string, text: string) =>
  client.call<Ack>('prompt.submit', { session_id, submission_id: text, text });

describe.each(BACKENDS)(
  'LIN-2/LIN-3 lineage across cold restarts (seed 001 lineage verification) on %s',
  (store) => {
    beforeAll(() => {
      rig.store = store;
    });

    it(
      'keeps reset and compressed histories, policy, cwd and admissions; refuses forks and copied receipts; runs nothing twice',
      async () => {
        const demo = await rig.model();
        // A small verbatim tail, so C's older turns are the middle a compression summarises.
        // max_resumes 1: a turn started at the crash becomes unknown (no step resume), so the cold
        // daemons show unknown-state blocking as the seed's lineage verification asks.
        const config = modelConfig(
          demo,
          'limits: {max_concurrent_turns: 1}',
          'compression: {tail_tokens: 40}',
          'recovery: {max_resumes: 1}',
        );
        let d = await rig.daemon({ config });
        let client = await d.connect();
        const dirs = new Map<string, string>();
        const ids = new Map<string, string>();
        for (const name of ['A', 'B', 'C', 'D', 'E']) {
          dirs.set(name, tempDir());
          const snap = await client.call<Snapshot>('session.create', {
            request_id: name,
            cwd: dirs.get(name),
          });
          ids.set(name, snap.session_id);
        }
        const [A, B, C, D, E] = ['A', 'B', 'C', 'D', 'E'].map((n) => ids.get(n)!) as [
          string,
          string,
          string,
          string,
          string,
        ];

        // B: a turn, then a real reset through the production path.
        await submit(client, B, 'b before the reset');
        await quiet(client, B);
        const announced = nextEvent(client, 'session.reset', (e) => e.session_id === B);
        const reset = await client.call<{ duplicate: boolean }>('session.reset', {
          session_id: B,
          request_id: 'reset-b',
        });
        expect(reset.duplicate).toBe(false);
        await announced;
        expect(texts(await client.call<Snapshot>('session.resume', { session_id: B }))).toEqual([]);
        // C: four turns, then a real compression through the production path: the first exchange
        // and the last stay verbatim, the two between are summarised by one model call.
        const cTexts = ['c before the compression', 'c second turn', 'c third turn', 'c fourth turn'];
        for (const text of cTexts) {
          await submit(client, C, text);
          await quiet(client, C);
        }
        const compressedEvent = nextEvent(client, 'session.compressed', (e) => e.session_id === C);
        const compressed = await client.call<{ compressed: boolean; messages: number }>('session.compress', {
          session_id: C,
        });
        expect(compressed.compressed).toBe(true);
        await compressedEvent;

        // One turn holds the only permit; everything submitted after it is durably queued.
        demo.hold();
        const held = await submit(client, A, 'a held');
        await demo.waitForRequests(demo.requests.length + 1);
        const queued = new Map<string, Ack>();
        for (const [name, id] of [
          ['A', A],
          ['B', B],
          ['C', C],
          ['D', D],
          ['E', E],
        ] as const) {
          queued.set(name, await submit(client, id, `${name.toLowerCase()} queued`));
        }
        await d.kill();
        demo.release();

        const db = await storeRows(d, store);
        await plantFork(db, D, 'D-fork');
        await tamperReceipt(db, 'copied', E, B);
        await db.close();

        // ---- the second daemon: cold recovery --------------------------------------------------------
        d = await rig.daemon({ home: d.home, config });
        client = await d.connect();
        // B: the reset's empty history, its frozen cwd in the actual prompt.
        const b = await quiet(client, B);
        expect(texts(b)).toEqual(['b queued', 'Demo model (scripted stand-in): you said: b queued']);
        const bPrompt = promptOf(demo, queued.get('B')!.admission_id);
        expect(bPrompt.map((m) => m.role)).toEqual(['system', 'user']);
        expect(bPrompt[0]!.content).toContain(`Working directory: ${dirs.get('B')}`);
        // C: the cold daemon validated the real compression step and the model sees the kept first
        // exchange, the summary and the tail, not the summarised turns verbatim.
        await quiet(client, C);
        const cPrompt = promptOf(demo, queued.get('C')!.admission_id).map((m) => m.content);
        expect(cPrompt[0]).toContain(`Working directory: ${dirs.get('C')}`);
        expect(cPrompt[1]).toBe('c before the compression');
        expect(cPrompt.filter((c) => c.startsWith(SUMMARY_MARKER))).toHaveLength(1);
        expect(cPrompt).not.toContain('c second turn');
        expect(cPrompt).not.toContain('c third turn');
        expect(cPrompt.at(-1)).toBe('c queued');
        expect(cPrompt.length).toBeLessThan(1 + 2 * cTexts.length + 1);
        // The parent transcript stays: the full history still holds every turn once.
        const full = await client.call<{ messages: { role: string; content: string | null }[] }>(
          'session.history',
          { session_id: C, view: 'full' },
        );
        const fullUser = full.messages.filter((m) => m.role === 'user').map((m) => m.content ?? '');
        // Every turn once, and the summary where the compression happened (after the fourth turn).
        expect(fullUser.filter((c) => !c.startsWith(SUMMARY_MARKER))).toEqual([...cTexts, 'c queued']);
        expect(fullUser.findIndex((c) => c.startsWith(SUMMARY_MARKER))).toBe(cTexts.length);
        // Lost-ACK retries after either transition get their receipts: same admission, duplicate.
        for (const name of ['B', 'C'] as const) {
          const again = await submit(client, ids.get(name)!, `${name.toLowerCase()} queued`);
          expect(again).toMatchObject({
            admission_id: queued.get(name)!.admission_id,
            duplicate: true,
            state: 'completed',
          });
        }
        // A: the held turn is unknown and blocks what was queued behind it.
        const a = await client.call<Snapshot>('session.resume', { session_id: A });
        expect(a.pending_admissions.map((p) => [p.admission_id, p.state])).toEqual([
          [held.admission_id, 'unknown'],
          [queued.get('A')!.admission_id, 'queued'],
        ]);
        expect(turnStarts(demo, queued.get('A')!.admission_id)).toBe(0);
        // The fork and the copied receipt: paused, loudly, and nothing of them claimed.
        const log = readFileSync(join(d.layout.root, 'logs', 'gateway.log'), 'utf8');
        for (const [name, failure] of [
          ['D', 'fork'],
          ['E', 'copied'],
        ] as const) {
          const snap = await client.call<Snapshot>('session.resume', { session_id: ids.get(name)! });
          expect(snap.state, name).toBe('paused');
          expect(snap.paused_reason, name).toContain(`receipt ${failure}`);
          expect(
            snap.pending_admissions.map((p) => p.state),
            name,
          ).toEqual(['queued']);
          expect(turnStarts(demo, queued.get(name)!.admission_id), name).toBe(0);
          expect(log).toMatch(new RegExp(`session ${ids.get(name)!} paused: receipt ${failure}`));
          await expect(
            client.call('session.reset', { session_id: ids.get(name)!, request_id: 'nope' }),
          ).rejects.toMatchObject({ reason: 'permission_denied' });
        }

        // A reset beside an unknown admission: history empty, the unknown one not replayed, the
        // queued one not cancelled; it runs on the empty history once the unknown one is resolved.
        await client.call('session.reset', { session_id: A, request_id: 'reset-a' });
        const afterReset = await client.call<Snapshot>('session.resume', { session_id: A });
        expect(texts(afterReset)).toEqual([]);
        expect(afterReset.pending_admissions.map((p) => p.state)).toEqual(['unknown', 'queued']);
        await client.call('prompt.resolve_unknown', {
          session_id: A,
          admission_id: held.admission_id,
          execution_generation: a.pending_admissions[0]!.execution_generation,
        });
        expect(texts(await quiet(client, A))).toEqual([
          'a queued',
          'Demo model (scripted stand-in): you said: a queued',
        ]);
        expect(
          promptOf(demo, queued.get('A')!.admission_id)
            .map((m) => m.content)
            .slice(1),
        ).toEqual(['a queued']);
        expect(turnStarts(demo, held.admission_id)).toBe(1);
        const repeat = await client.call<{ duplicate: boolean }>('session.reset', {
          session_id: A,
          request_id: 'reset-a',
        });
        expect(repeat.duplicate).toBe(true);
        await d.kill();

        // ---- the third daemon: nothing runs twice ----------------------------------------------------
        const before = demo.requests.length;
        d = await rig.daemon({ home: d.home, config });
        client = await d.connect();
        for (const name of ['A', 'B', 'C'] as const) {
          const snap = await client.call<Snapshot>('session.resume', { session_id: ids.get(name)! });
          expect(snap.state, name).toBe('idle');
          expect(turnStarts(demo, queued.get(name)!.admission_id), name).toBe(1);
        }
        for (const name of ['D', 'E'] as const) {
          const snap = await client.call<Snapshot>('session.resume', { session_id: ids.get(name)! });
          expect(snap.state, name).toBe('paused');
        }
        expect(demo.requests.length).toBe(before);
        await submit(client, A, 'a after the restarts');
        expect(texts(await quiet(client, A))).toEqual([
          'a queued',
          'Demo model (scripted stand-in): you said: a queued',
          'a after the restarts',
          'Demo model (scripted stand-in): you said: a after the restarts',
        ]);
      },
      E2E_TIMEOUT_MS,
    );
  },
);
