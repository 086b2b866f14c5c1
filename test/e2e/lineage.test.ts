/**
 * Seed 001's lineage verification (LIN-2, LIN-3), through the real daemon: three separate daemon
 * processes on one home. The first drives a real reset through session.reset, then is SIGKILLed after
 * durable queued admissions; the compression step is planted in the database as the compression
 * publication writes it (plantCompression), as are a fork row and a copied foreign receipt. Cold
 * daemons keep the reset's empty history, the compressed history, policy and cwd (checked in the
 * model's actual prompt), admission identities and unknown-state blocking; the planted cases stay
 * paused and unclaimed; a further restart runs nothing twice.
 */
import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { plantCompression, plantFork, tamperReceipt } from '../../scripts/torture/tamper.js';
import type { DemoModelServer } from '../../src/runtime/demo/server.js';
import { ADMISSION_HEADER } from '../../src/runtime/runner.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild } from './cli.js';
import { nextEvent } from './gateway-harness.js';
import {
  modelConfig,
  quiet,
  RecoveryRig,
  tempDir,
  texts,
  turnStarts,
  type Ack,
  type Snapshot,
} from './recovery-harness.js';

beforeAll(requireBuild);
const rig = new RecoveryRig();
afterEach(() => rig.cleanup());
const E2E_TIMEOUT_MS = 180_000;

/** The messages of the model request that opened the turn of `admissionId`. */
function promptOf(demo: DemoModelServer, admissionId: string): { role: string; content: string }[] {
  const request = demo.requests.find((r) => r.headers[ADMISSION_HEADER] === admissionId);
  if (!request) throw new Error(`no model request for ${admissionId}`);
  return request.body!.messages as { role: string; content: string }[];
}

const submit = (client: GatewayClient, session_id: string, text: string) =>
  client.call<Ack>('prompt.submit', { session_id, submission_id: text, text });

describe('LIN-2/LIN-3 lineage across cold restarts (seed 001 lineage verification)', () => {
  it(
    'keeps reset and compressed histories, policy, cwd and admissions; refuses forks and copied receipts; runs nothing twice',
    async () => {
      const demo = await rig.model();
      const config = modelConfig(demo, 'limits: {max_concurrent_turns: 1}');
      let d = await rig.daemon({ config });
      let client = await d.connect();
      const dirs = new Map<string, string>();
      const ids = new Map<string, string>();
      for (const name of ['A', 'B', 'C', 'D', 'E']) {
        dirs.set(name, tempDir());
        const snap = await client.call<Snapshot>('session.create', { request_id: name, cwd: dirs.get(name) });
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
      // C: a turn whose history the planted compression will summarise.
      await submit(client, C, 'c before the compression');
      await quiet(client, C);

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

      const db = new Database(d.layout.stateDb('default'));
      plantCompression(db, C, 'C-compressed', 'Summary: the user said "c before the compression".');
      plantFork(db, D, 'D-fork');
      tamperReceipt(db, 'copied', E, B);
      db.close();

      // ---- the second daemon: cold recovery --------------------------------------------------------
      d = await rig.daemon({ home: d.home, config });
      client = await d.connect();
      // B: the reset's empty history, its frozen cwd in the actual prompt.
      const b = await quiet(client, B);
      expect(texts(b)).toEqual(['b queued', 'Demo model (scripted stand-in): you said: b queued']);
      const bPrompt = promptOf(demo, queued.get('B')!.admission_id);
      expect(bPrompt.map((m) => m.role)).toEqual(['system', 'user']);
      expect(bPrompt[0]!.content).toContain(`Working directory: ${dirs.get('B')}`);
      // C: the model sees the summary, not the compressed-away turn.
      await quiet(client, C);
      const cPrompt = promptOf(demo, queued.get('C')!.admission_id).map((m) => m.content);
      expect(cPrompt.slice(1)).toEqual(['Summary: the user said "c before the compression".', 'c queued']);
      expect(cPrompt[0]).toContain(`Working directory: ${dirs.get('C')}`);
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
});
