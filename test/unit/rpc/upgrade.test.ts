import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBindRefusedError, startRpcServer } from '../../../src/surfaces/rpc/server.js';
import { TicketBook } from '../../../src/domain/auth/tickets.js';
import {
  connect,
  OWNER,
  rejectedUpgrade,
  startHarness,
  testDispatcher,
  ticketProtocols,
  recordingLogger,
  type Harness,
} from './harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.server.close();
  harness = undefined;
});

describe('AUTH-2 native ticket at the WebSocket upgrade', () => {
  it('accepts an interactive ticket, answers gatehouse.v1, and serves ping', async () => {
    harness = await startHarness();
    const { ticket } = harness.tickets.mint('interactive', OWNER);
    const client = await connect(harness.wsUrl, ticketProtocols(ticket));
    expect(client.ws.protocol).toBe('gatehouse.v1');
    expect((await client.call('ping', {})).result).toEqual({ pong: true });
    const described = (await client.call('runtime.describe', {})).result as Record<string, unknown>;
    expect(described).toMatchObject({
      authority: { instance_id: 'inst-test', profile: 'default' },
      epoch: 7,
      principal: { subject: 'native:owner', provider: 'native' },
      session_create: { sources: ['cli'] },
    });
    expect(described.capabilities).toContain('session:operator');
    expect(JSON.stringify(described)).not.toContain(ticket);
    client.close();
  });

  it('rejects forged, replayed, expired and wrong-purpose tickets, each with its own reason', async () => {
    let now = 5_000_000;
    harness = await startHarness({ ticketOptions: { now: () => now } });
    const { tickets, wsUrl } = harness;

    const forged = await rejectedUpgrade(wsUrl, ticketProtocols('A'.repeat(43)));
    expect(forged).toMatchObject({ status: 401, body: { error: { reason: 'forged' } } });

    const used = tickets.mint('interactive', OWNER).ticket;
    (await connect(wsUrl, ticketProtocols(used))).close();
    expect((await rejectedUpgrade(wsUrl, ticketProtocols(used))).body.error.reason).toBe('replayed');

    const stale = tickets.mint('interactive', OWNER).ticket;
    now += 30_001;
    expect((await rejectedUpgrade(wsUrl, ticketProtocols(stale))).body.error.reason).toBe('expired');

    const dashboardTicket = tickets.mint('dashboard', OWNER).ticket;
    expect((await rejectedUpgrade(wsUrl, ticketProtocols(dashboardTicket))).body.error.reason).toBe(
      'wrong_purpose',
    );
    const nativeTicket = tickets.mint('interactive', OWNER).ticket;
    expect((await rejectedUpgrade(`${wsUrl}?ticket=${nativeTicket}`)).body.error.reason).toBe(
      'wrong_purpose',
    );
  });

  it('refuses an upgrade with no credential, and a ticket without gatehouse.v1', async () => {
    harness = await startHarness();
    expect(await rejectedUpgrade(harness.wsUrl)).toMatchObject({
      status: 401,
      body: { error: { reason: 'missing' } },
    });
    const { ticket } = harness.tickets.mint('interactive', OWNER);
    const noProtocol = await rejectedUpgrade(harness.wsUrl, [`gatehouse-ticket.${ticket}`]);
    expect(noProtocol).toMatchObject({ status: 400, body: { error: { reason: 'protocol_required' } } });
    // Refused before the ticket was looked at, so it is not spent: the corrected request works.
    const client = await connect(harness.wsUrl, ticketProtocols(ticket));
    expect(client.ws.protocol).toBe('gatehouse.v1');
    client.close();
  });

  it('AUTH-4 a worker-adoption ticket connects without operator or create capability', async () => {
    harness = await startHarness();
    const { ticket } = harness.tickets.mint('worker-adoption', OWNER);
    const client = await connect(harness.wsUrl, ticketProtocols(ticket));
    const described = (await client.call('runtime.describe', {})).result as { capabilities: string[] };
    expect(described.capabilities).not.toContain('session:operator');
    expect(described.capabilities).not.toContain('session:create');
    expect(described.capabilities).toContain('session:submit');
    expect((await client.call('test.create', {})).error).toMatchObject({
      data: { reason: 'permission_denied' },
    });
    expect(
      (await client.call('runtime.describe', { capabilities: ['session:operator'] })).error,
    ).toMatchObject({
      code: -32602,
      data: { reason: 'invalid_params' },
    });
    client.close();
  });

  it('refuses a native client that claims a foreign browser Origin', async () => {
    harness = await startHarness();
    const { ticket } = harness.tickets.mint('interactive', OWNER);
    const refused = await rejectedUpgrade(harness.wsUrl, ticketProtocols(ticket), {
      origin: 'https://evil.example',
    });
    expect(refused).toMatchObject({ status: 403, body: { error: { reason: 'origin_denied' } } });
  });

  it('refuses a Host that is not loopback (DNS rebinding)', async () => {
    harness = await startHarness();
    const { ticket } = harness.tickets.mint('interactive', OWNER);
    const refused = await rejectedUpgrade(harness.wsUrl, ticketProtocols(ticket), {
      headers: { host: 'rebind.example' },
    });
    expect(refused).toMatchObject({ status: 403, body: { error: { reason: 'host_denied' } } });
  });
});

describe('LOC transport over a real socket', () => {
  it('starts handlers in frame order and never answers a notification', async () => {
    harness = await startHarness();
    const client = await connect(
      harness.wsUrl,
      ticketProtocols(harness.tickets.mint('interactive', OWNER).ticket),
    );
    client.ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'test.record', params: { n: 0 } }));
    const replies = await Promise.all([1, 2, 3, 4, 5].map((n) => client.call('test.record', { n })));
    expect(harness.recorded).toEqual([0, 1, 2, 3, 4, 5]);
    expect(replies.map((reply) => reply.result)).toEqual([1, 2, 3, 4, 5]);
    expect(client.notifications).toEqual([]);
    client.ws.send('{oops');
    await client.untilNotifications(1);
    expect(client.notifications[0]).toMatchObject({
      id: null,
      error: { code: -32700, data: { reason: 'parse_error' } },
    });
    client.close();
  });

  it('accepts a browser Origin the owner listed', async () => {
    harness = await startHarness({ allowedOrigins: ['http://localhost:5173'] });
    const { ticket } = harness.tickets.mint('interactive', OWNER);
    const client = await connect(harness.wsUrl, ticketProtocols(ticket), { origin: 'http://localhost:5173' });
    expect((await client.call('ping', {})).result).toEqual({ pong: true });
    client.close();
  });

  it('refuses to start with a malformed allowed origin', async () => {
    await expect(startHarness({ allowedOrigins: ['localhost:5173/path'] })).rejects.toThrow(/allowed origin/);
  });
});

describe('AUTH-3 internal credential for server-spawned clients', () => {
  it('accepts the process credential as an operator and refuses any other', async () => {
    harness = await startHarness({ internalCredential: 'per-process-secret' });
    const refused = await rejectedUpgrade(harness.wsUrl, ['gatehouse.v1', 'gatehouse-internal.guess']);
    expect(refused).toMatchObject({ status: 401, body: { error: { reason: 'forged' } } });
    const client = await connect(harness.wsUrl, ['gatehouse.v1', 'gatehouse-internal.per-process-secret']);
    const described = (await client.call('runtime.describe', {})).result as {
      principal: { provider: string };
      capabilities: string[];
    };
    expect(described.principal.provider).toBe('internal');
    expect(described.capabilities).toContain('session:operator');
    client.close();
  });
});

describe('AUTH-3 legacy ?token=', () => {
  it('is refused when disabled', async () => {
    harness = await startHarness({ legacyToken: { enabled: false, token: 'legacy-secret' } });
    const refused = await rejectedUpgrade(`${harness.wsUrl}?token=legacy-secret`);
    expect(refused).toMatchObject({ status: 401, body: { error: { reason: 'legacy_token_disabled' } } });
  });

  it('is accepted when enabled, and then also allows creation; a wrong token is forged', async () => {
    harness = await startHarness({ legacyToken: { enabled: true, token: 'legacy-secret' } });
    expect((await rejectedUpgrade(`${harness.wsUrl}?token=guess`)).body.error.reason).toBe('forged');
    const client = await connect(`${harness.wsUrl}?token=legacy-secret`);
    expect((await client.call('test.create', {})).result).toEqual({ created: true });
    const described = (await client.call('runtime.describe', {})).result as {
      principal: { provider: string };
    };
    expect(described.principal.provider).toBe('legacy_token');
    client.close();
  });
});

describe('AUTH-6 loopback by default', () => {
  it('refuses to bind a non-loopback host without allowRemote, with a clear error', async () => {
    const attempt = startRpcServer({
      host: '0.0.0.0',
      port: 0,
      dispatcher: testDispatcher(recordingLogger()),
      tickets: new TicketBook(),
    });
    await expect(attempt).rejects.toThrow(RemoteBindRefusedError);
    await expect(attempt).rejects.toThrow(/not a loopback address.*allowRemote/);
  });
});
