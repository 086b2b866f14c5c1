/**
 * Seed verification, rejections (issue 4, e2e case 7): every refused credential, identity claim and
 * launch field gets its own reason, and nothing is created. Ticket EXPIRY is proven with an injected
 * clock in test/unit/auth/tickets.test.ts and test/unit/rpc/upgrade.test.ts (waiting out the real
 * 30 s lifetime here would only slow the suite).
 */
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { requestTicket } from '../../src/surfaces/control/client.js';
import { GatewayClient, RpcCallError } from '../../src/surfaces/client/rpc-client.js';
import { rejectedUpgrade, ticketProtocols } from '../unit/rpc/harness.js';
import { BACKENDS } from './gateway-harness.js';
import { createAttached, dashboardConfig, dashboardTicket, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();

describe.each(BACKENDS)('refused tickets and launch fields on %s', (store) => {
  beforeAll(() => {
    fx.store = store;
  });

  describe('AUTH-2/AUTH-3 refused tickets at the upgrade', () => {
    it('forged, replayed and wrong-purpose tickets each get 401 and their reason; nothing is created', async () => {
      const d = await fx.daemon({ extraConfig: await dashboardConfig() });
      const wsUrl = `${d.url.replace(/^http/, 'ws')}/api/ws`;
      const origin = d.url;
      const refused = async (url: string, protocols: string[] = []) => {
        const { status, body } = await rejectedUpgrade(url, protocols, { origin });
        return { status, reason: body.error.reason };
      };
      const made = randomBytes(32).toString('base64url');
      expect(await refused(wsUrl, ticketProtocols(made))).toEqual({ status: 401, reason: 'forged' });
      expect(await refused(`${wsUrl}?ticket=${made}`)).toEqual({ status: 401, reason: 'forged' });

      const native = (await requestTicket(d.layout.controlSocket, 'interactive')).ticket;
      (await GatewayClient.connect(d.url, native)).close().catch(() => undefined);
      expect(await refused(wsUrl, ticketProtocols(native))).toEqual({ status: 401, reason: 'replayed' });

      const dash = await dashboardTicket(d.url);
      const first = await GatewayClient.open(new WebSocket(`${wsUrl}?ticket=${dash}`, [], { origin }));
      await first.close();
      expect(await refused(`${wsUrl}?ticket=${dash}`)).toEqual({ status: 401, reason: 'replayed' });

      const nativeOnDashboardPath = (await requestTicket(d.layout.controlSocket, 'interactive')).ticket;
      expect(await refused(`${wsUrl}?ticket=${nativeOnDashboardPath}`)).toEqual({
        status: 401,
        reason: 'wrong_purpose',
      });
      const workerOnDashboardPath = (await requestTicket(d.layout.controlSocket, 'worker-adoption')).ticket;
      expect(await refused(`${wsUrl}?ticket=${workerOnDashboardPath}`)).toEqual({
        status: 401,
        reason: 'wrong_purpose',
      });
      const dashboardOnNativePath = await dashboardTicket(d.url);
      expect(await refused(wsUrl, ticketProtocols(dashboardOnNativePath))).toEqual({
        status: 401,
        reason: 'wrong_purpose',
      });
      // A ticket offered on the wrong path is spent: it cannot be retried on the right one.
      expect(await refused(`${wsUrl}?ticket=${dashboardOnNativePath}`)).toEqual({
        status: 401,
        reason: 'replayed',
      });

      const owner = await d.connect();
      expect(await owner.call('session.list', { scope: 'stored' })).toMatchObject({ sessions: [] });
    });
  });

  describe('AUTH-2/AUTH-4 a worker-adoption ticket', () => {
    it('cannot create and is no operator: the owner’s sessions do not exist for it', async () => {
      const d = await fx.daemon();
      const owner = await d.connect();
      const session_id = await createAttached(owner, { cwd: tempDir() });
      const worker = await d.connect('worker-adoption');
      const described = await worker.call<{ capabilities: string[]; principal: { provider: string } }>(
        'runtime.describe',
      );
      expect(described.principal.provider).toBe('worker');
      expect(described.capabilities).not.toContain('session:operator');
      expect(described.capabilities).not.toContain('session:create');

      await expect(worker.call('session.create', { cwd: tempDir() })).rejects.toMatchObject({
        reason: 'permission_denied',
      });
      for (const [method, params] of [
        ['session.resume', { session_id }],
        ['session.info', { session_id }],
        ['prompt.submit', { session_id, submission_id: 'w', text: 'hello' }],
        ['session.interrupt', { session_id, execution_generation: 0 }],
      ] as const) {
        await expect(worker.call(method, params), method).rejects.toMatchObject({ reason: 'not_found' });
      }
      expect(await worker.call('session.list', { scope: 'stored' })).toMatchObject({ sessions: [] });
      const mine = await owner.call<{ sessions: { session_id: string }[] }>('session.list', {
        scope: 'stored',
      });
      expect(mine.sessions.map((s) => s.session_id)).toEqual([session_id]);
      const snapshot = await owner.call<{ pending_admissions: unknown[] }>('session.resume', { session_id });
      expect(snapshot.pending_admissions).toEqual([]);
    });
  });

  /** [label, method, params, the field the error must name]. */
  type Case = [string, string, Record<string, unknown>, string];

  const identityCases: Case[] = [
    ['principal in create', 'session.create', { principal: { subject: 'root' } }, 'principal'],
    ['subject in create', 'session.create', { subject: 'native:owner' }, 'subject'],
    ['capabilities in create', 'session.create', { capabilities: ['session:operator'] }, 'capabilities'],
    ['operator in create', 'session.create', { operator: true }, 'operator'],
    ['foreign profile in create', 'session.create', { profile: 'other' }, 'profile'],
    ['foreign source in create', 'session.create', { source: 'telegram' }, 'source'],
    [
      'principal in submit',
      'prompt.submit',
      { session_id: 'x', submission_id: 'y', text: 'z', principal: {} },
      'principal',
    ],
    [
      'source in submit',
      'prompt.submit',
      { session_id: 'x', submission_id: 'y', text: 'z', source: 'gui' },
      'source',
    ],
    ['operator on resume', 'session.resume', { session_id: 'x', operator: true }, 'operator'],
    ['operator scope on list', 'session.list', { scope: 'operator' }, 'scope'],
    ['operator scope on create', 'session.create', { scope: 'operator' }, 'scope'],
  ];

  const launchCases: Case[] = [
    ['worktree', 'session.create', { worktree: true }, 'worktree'],
    ['history', 'session.create', { history: [{ role: 'user', content: 'hi' }] }, 'history'],
    ['service_tier', 'session.create', { service_tier: 'flex' }, 'service_tier'],
    ['editor without acp', 'session.create', { editor: 'zed' }, 'editor'],
    ['base_url with credentials', 'session.create', { base_url: 'https://u:p@example.com/v1' }, 'base_url'],
    ['base_url with a query', 'session.create', { base_url: 'https://example.com/v1?key=1' }, 'base_url'],
    ['base_url with a fragment', 'session.create', { base_url: 'https://example.com/v1#x' }, 'base_url'],
    ['base_url not http', 'session.create', { base_url: 'ftp://example.com/v1' }, 'base_url'],
    ['base_url not a URL', 'session.create', { base_url: 'example dot com' }, 'base_url'],
    ['base_url empty', 'session.create', { base_url: '' }, 'base_url'],
    ['unknown toolset', 'session.create', { toolsets: ['no_such_toolset'] }, 'toolsets'],
    ['desktop_ui on cli', 'session.create', { source: 'cli', toolsets: ['desktop_ui'] }, 'toolsets'],
    [
      'desktop_ui on tui',
      'session.create',
      { source: 'tui', toolsets: ['terminal', 'desktop_ui'] },
      'toolsets',
    ],
    ['max_turns 0', 'session.create', { max_turns: 0 }, 'max_turns'],
    ['max_turns fractional', 'session.create', { max_turns: 1.5 }, 'max_turns'],
    ['max_turns as text', 'session.create', { max_turns: '5' }, 'max_turns'],
    ['non-boolean yolo', 'session.create', { yolo: 'yes' }, 'yolo'],
    ['non-boolean hidden', 'session.create', { hidden: 1 }, 'hidden'],
    ['relative cwd', 'session.create', { cwd: 'work/dir' }, 'cwd'],
    ['cwd with ..', 'session.create', { cwd: '/tmp/../etc' }, 'cwd'],
    ['missing cwd', 'session.create', { cwd: '/no/such/gatehouse/dir' }, 'cwd'],
    ['empty model', 'session.create', { model: '  ' }, 'model'],
    ['unknown reasoning', 'session.create', { reasoning: 'extreme' }, 'reasoning'],
    ['unknown skill', 'session.create', { skills: ['no-such-skill'] }, 'skills'],
    ['skills in safe mode', 'session.create', { skills: ['x'], safe_mode: true }, 'skills'],
    ['unknown provider', 'session.create', { provider: 'no-such-provider' }, 'provider'],
    [
      'provider with base_url',
      'session.create',
      { provider: 'default', base_url: 'https://x.example/v1' },
      'provider',
    ],
    ['empty api_key', 'session.create', { api_key: '' }, 'api_key'],
    ['empty request_id', 'session.create', { request_id: '' }, 'request_id'],
    ['non-string title', 'session.create', { title: 42 }, 'title'],
  ];

  describe('AUTH-1/LOC-5 identity claims and unsupported launch fields are invalid_params', () => {
    it('refuses each with invalid_params naming the field, and creates nothing', async () => {
      const d = await fx.daemon();
      const client = await d.connect();
      const cwd = tempDir();
      const wrong: string[] = [];
      for (const [label, method, params, field] of [...identityCases, ...launchCases]) {
        const withCwd = method === 'session.create' && !('cwd' in params) ? { cwd, ...params } : params;
        const error = await client.call(method, withCwd).then(
          () => null,
          (e: unknown) => e,
        );
        if (!(error instanceof RpcCallError)) {
          wrong.push(`${label}: accepted`);
          continue;
        }
        const told = `${error.message} ${JSON.stringify(error.details)}`;
        if (error.reason !== 'invalid_params') wrong.push(`${label}: ${error.reason}`);
        else if (!told.includes(field)) wrong.push(`${label}: does not name ${field}: ${told}`);
      }
      expect(wrong).toEqual([]);
      expect(await client.call('session.list', { scope: 'stored' })).toMatchObject({ sessions: [] });
      expect(await client.call('session.list', { scope: 'live' })).toMatchObject({ sessions: [] });
    });
  });
});
