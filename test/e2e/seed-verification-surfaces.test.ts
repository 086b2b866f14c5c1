/**
 * Seed verification, cross-surface attribution (issue 4, e2e case 5): a native-created session
 * attached from the dashboard and a dashboard-created one attached natively, through the real login,
 * cookie and ws-ticket path. Every admission keeps its submitter, every session its creator, and the
 * private binding of a non-owner's submission reaches neither the model nor any client.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { GatewayClient, Notification } from '../../src/surfaces/client/rpc-client.js';
import { BACKENDS, nextEvent } from './gateway-harness.js';
import { storeRows } from './store-rows.js';
import {
  chatRequests,
  createAttached,
  dashboardClient,
  dashboardConfig,
  tempDir,
  useFixture,
  type Snapshot,
} from './seed-fixture.js';

const fx = useFixture();
async function submitAndSettle(client: GatewayClient, session_id: string, id: string, text: string) {
  const settled = nextEvent(client, 'admission.settled', (e) => e.session_id === session_id);
  await client.call('prompt.submit', { session_id, submission_id: id, text });
  expect((await settled).event).toMatchObject({ outcome: 'completed' });
}

type AdmissionRow = {
  logical_id: string;
  text: string;
  submitter_subject: string;
  submitter_provider: string;
  binding: string | null;
};

describe.each(BACKENDS)('cross-surface sessions on %s', (store) => {
  beforeAll(() => {
    fx.store = store;
  });

  describe('AUTH-4/AUTH-5 cross-surface sessions keep creator and submitter', () => {
    it('native-created → dashboard-attached and dashboard-created → native-attached', async () => {
      const d = await fx.daemon({ extraConfig: await dashboardConfig() });
      const native = await d.connect();
      const dashboard = await dashboardClient(d.url);
      const heard: Record<'native' | 'dashboard', Notification[]> = { native: [], dashboard: [] };
      native.onNotification((n) => heard.native.push(n));
      dashboard.onNotification((n) => heard.dashboard.push(n));

      const a = await createAttached(native, { cwd: tempDir() });
      await submitAndSettle(native, a, 'n1', 'native speaks in A');
      const attached = await dashboard.call<Snapshot>('session.resume', { session_id: a });
      expect(attached.messages.map((m) => m.content)).toContain('native speaks in A');
      await submitAndSettle(dashboard, a, 'd1', 'dashboard speaks in A');

      const b = await createAttached(dashboard, { cwd: tempDir() });
      await submitAndSettle(dashboard, b, 'd1', 'dashboard speaks in B');
      await native.call('session.resume', { session_id: b });
      await submitAndSettle(native, b, 'n1', 'native speaks in B');

      // A reconnecting viewer of each kind still reaches both sessions.
      await dashboard.close();
      const dashboardAgain = await dashboardClient(d.url);
      const responses: Record<'native' | 'dashboard', unknown[]> = { native: [], dashboard: [] };
      for (const [who, client] of [
        ['native', native],
        ['dashboard', dashboardAgain],
      ] as const) {
        for (const session_id of [a, b]) {
          responses[who].push(await client.call('session.resume', { session_id }));
          responses[who].push(await client.call('session.info', { session_id }));
        }
        responses[who].push(await client.call('session.list', { scope: 'stored' }));
        responses[who].push(await client.call('session.list', { scope: 'live' }));
        responses[who].push(await client.call('runtime.describe', {}));
      }
      const resumedA = responses.dashboard[0] as Snapshot;
      expect(resumedA.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
        'native speaks in A',
        'dashboard speaks in A',
      ]);

      // The model saw each session's whole history under one unchanged system message.
      const requests = chatRequests(fx.demo);
      expect(requests).toHaveLength(4);
      const systemOf = (i: number) => requests[i]!.messages[0];
      expect(systemOf(1)).toEqual(systemOf(0));
      expect(systemOf(3)).toEqual(systemOf(2));
      const usersIn = (i: number) =>
        requests[i]!.messages.filter((m) => m.role === 'user').map((m) => m.content);
      expect(usersIn(1)).toEqual(['native speaks in A', 'dashboard speaks in A']);
      expect(usersIn(3)).toEqual(['dashboard speaks in B', 'native speaks in B']);

      await d.stop();
      fx.forget(d);
      const db = await storeRows(d, store);
      const admissions = await db.all<AdmissionRow>(
        'SELECT logical_id, text, submitter_subject, submitter_provider, binding FROM admissions ORDER BY seq',
      );
      const owners = await db.all(
        'SELECT logical_id, owner_subject, owner_provider FROM local_sessions ORDER BY created_at',
      );
      const receipts = (await db.all<{ body: string }>('SELECT body FROM private_receipts')).map(
        (r) => JSON.parse(r.body) as { logical_id?: string; owner?: unknown },
      );
      await db.close();

      expect(owners).toEqual([
        { logical_id: a, owner_subject: 'native:owner', owner_provider: 'native' },
        { logical_id: b, owner_subject: 'dashboard:owner', owner_provider: 'dashboard' },
      ]);
      expect(receipts.find((r) => r.logical_id === a)?.owner).toEqual({
        subject: 'native:owner',
        provider: 'native',
      });
      expect(receipts.find((r) => r.logical_id === b)?.owner).toEqual({
        subject: 'dashboard:owner',
        provider: 'dashboard',
      });
      expect(admissions.map(({ binding: _b, ...rest }) => rest)).toEqual([
        {
          logical_id: a,
          text: 'native speaks in A',
          submitter_subject: 'native:owner',
          submitter_provider: 'native',
        },
        {
          logical_id: a,
          text: 'dashboard speaks in A',
          submitter_subject: 'dashboard:owner',
          submitter_provider: 'dashboard',
        },
        {
          logical_id: b,
          text: 'dashboard speaks in B',
          submitter_subject: 'dashboard:owner',
          submitter_provider: 'dashboard',
        },
        {
          logical_id: b,
          text: 'native speaks in B',
          submitter_subject: 'native:owner',
          submitter_provider: 'native',
        },
      ]);
      // Only the non-owner submissions carry a binding.
      expect(admissions.map((r) => r.binding !== null)).toEqual([false, true, false, true]);
      const bindings = admissions.flatMap((r) => (r.binding === null ? [] : [r.binding]));
      const forms = (secret: string) => [secret, JSON.stringify(secret).slice(1, -1)];
      const secrets = bindings.flatMap(forms);

      const modelText = JSON.stringify(fx.demo.requests.map((r) => r.body));
      for (const s of [...secrets, 'native:owner', 'dashboard:owner', '"binding"']) {
        expect(modelText).not.toContain(s);
      }
      for (const who of ['native', 'dashboard'] as const) {
        const other = who === 'native' ? 'dashboard:owner' : 'native:owner';
        const seen = JSON.stringify([responses[who], heard[who]]);
        for (const s of [...secrets, other, '"binding"', 'submitter']) expect(seen).not.toContain(s);
      }
    });
  });

  describe('LOC-10/AUTH-4 an approval is shared across authentication methods', () => {
    it('a native turn waiting for approval is answered from the dashboard; a worker cannot see it', async () => {
      const d = await fx.daemon({ extraConfig: await dashboardConfig() });
      const cwd = tempDir();
      const native = await d.connect();
      const session_id = await createAttached(native, { cwd });
      const asked = nextEvent(native, 'approval.request');
      await native.call('prompt.submit', {
        session_id,
        submission_id: 'rm',
        text: `run: rm -rf ${cwd}/gone && echo approved-from-dashboard`,
      });
      const request = (await asked).event;
      await native.close();

      const worker = await d.connect('worker-adoption');
      await expect(
        worker.call('approval.respond', {
          session_id,
          prompt_id: request['prompt_id'],
          execution_generation: request['execution_generation'],
          choice: 'once',
        }),
      ).rejects.toMatchObject({ reason: 'not_found' });

      const dashboard = await dashboardClient(d.url);
      const snapshot = await dashboard.call<Snapshot>('session.resume', { session_id });
      expect(snapshot.prompts.map((p) => p.prompt_id)).toEqual([request['prompt_id']]);
      const done = nextEvent(dashboard, 'turn.complete');
      await dashboard.call('approval.respond', {
        session_id,
        prompt_id: request['prompt_id'],
        execution_generation: request['execution_generation'],
        choice: 'once',
      });
      expect((await done).event).toMatchObject({ outcome: 'completed' });
      expect(JSON.stringify(chatRequests(fx.demo).at(-1))).toContain('approved-from-dashboard');
    });
  });
});
