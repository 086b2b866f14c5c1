import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SessionSource } from '../../src/domain/session/source.js';
import { tamperReceipt, type TamperKind } from '../../scripts/torture/tamper.js';
import { BACKENDS } from './gateway-harness.js';
import { openSessionStore, storeRows } from './store-rows.js';
import {
  modelConfig,
  quiet,
  tempDir,
  turnStarts,
  useRecoveryRig,
  type Ack,
  type Snapshot,
} from './recovery-harness.js';

const rig = useRecoveryRig();

const KINDS: (TamperKind | 'missing')[] = [
  'foreign_profile',
  'mismatched_route',
  'copied',
  'corrupt_json',
  'missing',
];
const FAILURE: Record<string, string> = {
  foreign_profile: 'foreign_profile',
  mismatched_route: 'mismatched_route',
  copied: 'copied',
  corrupt_json: 'malformed',
  missing: 'missing',
};

describe.each(BACKENDS)(
  'REC-1 cold start re-validates every receipt and route before anything runs on %s',
  (store) => {
    beforeAll(() => {
      rig.store = store;
    });

    it('pauses each tampered session loudly and runs nothing of it, while a healthy session keeps working', async () => {
      const demo = await rig.model();
      // One turn at a time: while the blocker's model call is held, every other admission stays queued.
      const config = modelConfig(demo, 'limits: {max_concurrent_turns: 1}');
      let d = await rig.daemon({ config });
      let client = await d.connect();
      const create = (request_id: string) =>
        client.call<Snapshot>('session.create', { request_id, cwd: tempDir() }).then((s) => s.session_id);
      const blocker = await create('blocker');
      const healthy = await create('healthy');
      const victims = new Map<string, string>();
      for (const kind of KINDS) victims.set(kind, await create(kind));
      demo.hold();
      await client.call('prompt.submit', { session_id: blocker, submission_id: 'b', text: 'hold me' });
      await demo.waitForRequests(1);
      const queued = new Map<string, Ack>();
      for (const [kind, id] of [...victims, ['healthy', healthy] as const]) {
        queued.set(
          kind,
          await client.call<Ack>('prompt.submit', {
            session_id: id,
            submission_id: `q-${kind}`,
            text: `queued ${kind}`,
          }),
        );
      }
      await d.kill();
      demo.release();

      const db = await storeRows(d, store);
      for (const [kind, id] of victims) await tamperReceipt(db, kind as TamperKind, id, healthy);
      await db.close();

      d = await rig.daemon({ home: d.home, config });
      client = await d.connect();
      const done = await quiet(client, healthy);
      expect(done.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
        'queued healthy',
      ]);
      expect(turnStarts(demo, queued.get('healthy')!.admission_id)).toBe(1);

      const log = readFileSync(join(d.layout.root, 'logs', 'gateway.log'), 'utf8');
      for (const [kind, id] of victims) {
        const snap = await client.call<Snapshot>('session.resume', { session_id: id });
        expect(snap.state, kind).toBe('paused');
        expect(snap.paused_reason, kind).toContain(FAILURE[kind]);
        expect(
          snap.pending_admissions.map((a) => a.state),
          kind,
        ).toEqual(['queued']);
        expect(turnStarts(demo, queued.get(kind)!.admission_id), kind).toBe(0);
        await expect(
          client.call('prompt.submit', { session_id: id, submission_id: `late-${kind}`, text: 'refused' }),
          kind,
        ).rejects.toMatchObject({ reason: 'permission_denied' });
        expect(log, kind).toMatch(new RegExp(`session ${id} paused: receipt ${FAILURE[kind]}`));
      }

      // The healthy session is untouched by its neighbours' trouble.
      await client.call('prompt.submit', { session_id: healthy, submission_id: 'after', text: 'still here' });
      const after = await quiet(client, healthy);
      expect(after.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
        'queued healthy',
        'still here',
      ]);
    });

    it('never treats a historical CLI session without a receipt as a local session', async () => {
      const demo = await rig.model();
      const config = modelConfig(demo);
      let d = await rig.daemon({ config });
      await d.stop();
      const sessions = await openSessionStore(d, store);
      const origin = new SessionSource({ platform: 'cli', chat_id: 'old' }).toJSON();
      const access = await sessions.getOrCreateSession('agent:main:cli:dm:old', origin);
      await sessions.close();

      d = await rig.daemon({ home: d.home, config });
      const client = await d.connect();
      await expect(
        client.call('session.resume', { session_id: access.entry.session_id }),
      ).rejects.toMatchObject({
        reason: 'not_found',
      });
      await expect(
        client.call('prompt.submit', { session_id: access.entry.session_id, submission_id: 'x', text: 'hi' }),
      ).rejects.toMatchObject({ reason: 'not_found' });
      expect(demo.requests).toEqual([]);
    });
  },
);
