/**
 * Nobody locked in or out (issue 25, item 8), through the real daemon: a tool whose spawn meets a
 * full descriptor table fails alone and the daemon lives on; idle connections past a listener's cap
 * are refused at once, with a reason, and the owner gets back in as soon as they go.
 */
import net from 'node:net';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { FAULT_ENV } from '../../src/daemon/faults.js';
import { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { httpPost } from '../unit/rpc/harness.js';
import { runCli } from './cli.js';
import { startDaemon } from './gateway-harness.js';
import {
  createAttached,
  dashboardConfig,
  PASSWORD,
  runCommand,
  tempDir,
  useFixture,
} from './seed-fixture.js';

const fx = useFixture();
const E2E_TIMEOUT_MS = 120_000;

const run = (client: GatewayClient, sessionId: string, id: string, command: string): Promise<string> =>
  runCommand(fx, client, sessionId, id, command);

describe('a spawn failure fails the tool call, never the daemon (issue 25, item 8)', () => {
  it(
    'EMFILE at a terminal spawn: the call reports it, the daemon answers and the next command runs',
    async () => {
      const d = await fx.daemon({ env: { ...process.env, [FAULT_ENV]: 'tool.emfile' } });
      const client = await d.connect();
      const session = await createAttached(client, { cwd: tempDir(), yolo: true });
      const failed = await run(client, session, 'full', 'echo should-not-run');
      expect(failed).toMatch(/could not start bash: .*EMFILE/);
      expect(failed).not.toContain('should-not-run\n');
      expect(await run(client, session, 'after', 'echo ran-after')).toContain('ran-after');
      expect(d.child.exitCode).toBeNull();
      const health = (await fetch(`${d.url}/healthz`).then((r) => r.json())) as { state: string };
      expect(health.state).toBe('ready');
    },
    E2E_TIMEOUT_MS,
  );
});

/** Opens `n` idle connections (nothing sent) and resolves once each is connected. */
async function idle(n: number, connect: () => net.Socket): Promise<net.Socket[]> {
  const sockets = Array.from({ length: n }, connect);
  await Promise.all(sockets.map((s) => once(s, 'connect')));
  return sockets;
}

/** Everything a socket receives until the server closes it. */
async function answerOf(socket: net.Socket): Promise<string> {
  let text = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  await once(socket, 'close');
  return text;
}

describe('idle connections cannot lock the owner out (issue 25, item 8)', () => {
  it(
    'past listener.max_connections and the control socket cap a peer is refused at once with too_many_connections',
    async () => {
      const d = await fx.daemon({ extraConfig: 'listener:\n  max_connections: 16' });
      const { port } = new URL(d.url);
      const held = await idle(16, () => net.connect(Number(port), '127.0.0.1'));
      const refused = await answerOf(net.connect(Number(port), '127.0.0.1'));
      expect(refused).toMatch(/^HTTP\/1.1 503/);
      expect(refused).toContain('"reason":"too_many_connections"');

      const control = await idle(64, () => net.connect(d.layout.controlSocket));
      const busy = await answerOf(net.connect(d.layout.controlSocket));
      expect(JSON.parse(busy)).toMatchObject({ error: { reason: 'too_many_connections' } });

      // They go; the owner is back at once.
      await Promise.all([...held, ...control].map((s) => (s.destroy(), once(s, 'close'))));
      let health: { state?: string; connections?: { refused: number } } = {};
      for (let tries = 0; tries < 50 && health.state === undefined; tries++) {
        const res = await fetch(`${d.url}/healthz`);
        if (res.status === 200) health = (await res.json()) as typeof health;
        else await new Promise((resolve) => setTimeout(resolve, 20)); // the server sees the closes a tick later
      }
      expect(health.state).toBe('ready');
      expect(health.connections?.refused).toBeGreaterThanOrEqual(1);
      await expect(d.connect()).resolves.toBeDefined();
    },
    E2E_TIMEOUT_MS,
  );
});

/** Logs in with `password`; the cookie, or the refusal's HTTP status. */
async function login(url: string, password: string): Promise<string | number> {
  const reply = await httpPost(url, '/auth/login', { password }, { origin: url });
  if (reply.status !== 200) return reply.status;
  return (reply.headers['set-cookie'] as string[])[0]!.split(';')[0]!;
}

async function wsTicket(url: string, cookie: string): Promise<{ status: number; ticket?: string }> {
  const minted = await httpPost(url, '/api/auth/ws-ticket', undefined, { origin: url, cookie });
  return { status: minted.status, ticket: minted.body['ticket'] as string | undefined };
}

describe('gatehouse passwd takes effect at once and ends every dashboard login (issue 25, item 8)', () => {
  it(
    'the running daemon takes the new password, closes dashboard sockets, refuses old cookies, also after a restart',
    async () => {
      const d = await fx.daemon({ extraConfig: await dashboardConfig() });
      const oldCookie = await login(d.url, PASSWORD);
      expect(typeof oldCookie).toBe('string');
      const { ticket } = await wsTicket(d.url, oldCookie as string);
      const wsUrl = `${d.url.replace(/^http/, 'ws')}/api/ws?ticket=${encodeURIComponent(ticket!)}`;
      const dashboard = await GatewayClient.open(new WebSocket(wsUrl, [], { origin: d.url }));
      const closed = new Promise<number>((resolve) => dashboard.onClose(resolve));
      const native = await d.connect();

      const NEW = 'a brand new passphrase';
      const changed = await runCli(d.home, ['passwd'], { input: `${NEW}\n` });
      expect(changed.code).toBe(0);
      expect(changed.stdout).toContain('The running gateway uses it now; 1 dashboard login(s) ended');
      expect(await closed).toBe(4001);
      expect(native.closed).toBe(false); // only dashboard logins end

      expect((await wsTicket(d.url, oldCookie as string)).status).toBe(401);
      expect(await login(d.url, PASSWORD)).toBe(401);
      const newCookie = await login(d.url, NEW);
      expect(typeof newCookie).toBe('string');

      // After a restart the old cookie stays refused and the new one still works.
      await d.stop();
      fx.forget(d);
      const again = await startDaemon({ home: d.home });
      try {
        expect((await wsTicket(again.url, oldCookie as string)).status).toBe(401);
        expect((await wsTicket(again.url, newCookie as string)).status).toBe(200);
      } finally {
        await again.stop();
      }
    },
    E2E_TIMEOUT_MS,
  );
});
