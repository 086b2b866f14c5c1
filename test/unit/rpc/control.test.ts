import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TicketBook } from '../../../src/domain/auth/tickets.js';
import {
  ControlRequestError,
  identify,
  requestTicket,
  requestTicketPatiently,
} from '../../../src/surfaces/control/client.js';
import {
  ControlSocketError,
  startControlServer,
  type ControlServer,
} from '../../../src/surfaces/control/server.js';
import { connect, OWNER, rejectedUpgrade, startHarness, ticketProtocols, type Harness } from './harness.js';

let home: string;
let control: ControlServer | undefined;
let harness: Harness | undefined;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'gatehouse-control-'));
});
afterEach(async () => {
  await control?.close();
  await harness?.server.close();
  control = undefined;
  harness = undefined;
  rmSync(home, { recursive: true, force: true });
});

async function start(tickets = new TicketBook()): Promise<ControlServer> {
  control = await startControlServer({
    socketPath: join(home, 'gateway.sock'),
    tickets,
    grant: OWNER,
    sessionExists: (id) => Promise.resolve(id.startsWith('s-')),
    identify: () => ({
      state: 'ready',
      url: 'http://127.0.0.1:1234',
      instance_id: 'inst-1',
      epoch: 3,
      profiles: ['default'],
    }),
  });
  return control;
}

function rawLine(socketPath: string, line: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const socket = netConnect(socketPath);
    let reply = '';
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write(line));
    socket.on('data', (chunk: string) => (reply += chunk));
    socket.on('end', () => resolve(JSON.parse(reply)));
    socket.on('error', reject);
  });
}

describe('AUTH-2 control socket', () => {
  it('is created owner-only (0600)', async () => {
    const server = await start();
    expect(statSync(server.socketPath).mode & 0o777).toBe(0o600);
  });

  it('identifies the daemon', async () => {
    const server = await start();
    expect(await identify(server.socketPath)).toEqual({
      state: 'ready',
      url: 'http://127.0.0.1:1234',
      instance_id: 'inst-1',
      epoch: 3,
      profiles: ['default'],
    });
  });

  it('issues tickets a native client redeems at the upgrade', async () => {
    const tickets = new TicketBook();
    harness = await startHarness({ tickets });
    const server = await start(tickets);
    const interactive = await requestTicket(server.socketPath, 'interactive');
    expect(Date.parse(interactive.expires_at)).toBeGreaterThan(Date.now());
    const client = await connect(harness.wsUrl, ticketProtocols(interactive.ticket));
    const described = (await client.call('runtime.describe', {})).result as { capabilities: string[] };
    expect(described.capabilities).toContain('session:operator');
    client.close();
    expect(
      (await rejectedUpgrade(harness.wsUrl, ticketProtocols(interactive.ticket))).body.error.reason,
    ).toBe('replayed');

    const worker = await requestTicket(server.socketPath, 'worker-adoption');
    const workerClient = await connect(harness.wsUrl, ticketProtocols(worker.ticket));
    const workerView = (await workerClient.call('runtime.describe', {})).result as { capabilities: string[] };
    expect(workerView.capabilities).not.toContain('session:operator');
    workerClient.close();
  });

  it('answers bad input with a reason and issues nothing', async () => {
    const tickets = new TicketBook();
    const server = await start(tickets);
    expect(await rawLine(server.socketPath, 'not json\n')).toMatchObject({
      error: { reason: 'parse_error' },
    });
    expect(await rawLine(server.socketPath, '{"op":"session-ticket","purpose":"dashboard"}\n')).toMatchObject(
      {
        error: { reason: 'invalid_request' },
      },
    );
    expect(await rawLine(server.socketPath, '{"op":"identify","as":"root"}\n')).toMatchObject({
      error: { reason: 'invalid_request' },
    });
    await expect(requestTicket(server.socketPath, 'root' as 'interactive')).rejects.toMatchObject({
      reason: 'invalid_request',
    });
    expect(tickets.size).toBe(0);
  });

  it('AUTH-4 binds a worker-adoption ticket to named, existing sessions only', async () => {
    const tickets = new TicketBook();
    harness = await startHarness({ tickets });
    const server = await start(tickets);
    const bound = await requestTicket(server.socketPath, 'worker-adoption', ['s-1', 's-1', 's-2']);
    expect(bound.sessions).toEqual(['s-1', 's-2']);
    const client = await connect(harness.wsUrl, ticketProtocols(bound.ticket));
    const view = (await client.call('runtime.describe', {})).result as { sessions: string[] };
    expect(view.sessions).toEqual(['s-1', 's-2']);
    client.close();
    await expect(requestTicket(server.socketPath, 'worker-adoption', ['s-1', 'x-9'])).rejects.toMatchObject({
      reason: 'unknown_session',
      message: 'no session x-9 in profile default: list them with "gatehouse sessions"',
    });
    await expect(requestTicket(server.socketPath, 'interactive', ['s-1'])).rejects.toMatchObject({
      reason: 'invalid_request',
    });
    expect(tickets.size).toBe(0);
  });

  it('a patient request waits out a full ticket book instead of giving up', async () => {
    const tickets = new TicketBook({ capacity: 1 });
    const server = await start(tickets);
    const held = await requestTicket(server.socketPath, 'interactive');
    await expect(requestTicket(server.socketPath, 'interactive')).rejects.toMatchObject({
      reason: 'ticket_capacity',
    });
    const waits: number[] = [];
    const patient = requestTicketPatiently(server.socketPath, 'interactive', {
      onWait: (_message, attempt) => {
        waits.push(attempt);
        // The held ticket is redeemed while the request waits: its slot frees at once.
        if (attempt === 1) tickets.redeem(held.ticket, ['interactive']);
      },
    });
    expect((await patient).ticket).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(waits).toEqual([0, 1]);
  });

  it('reports an unreachable socket as a typed error', async () => {
    await expect(identify(join(home, 'nobody.sock'))).rejects.toBeInstanceOf(ControlRequestError);
  });

  it('replaces a stale socket file left by a killed daemon', async () => {
    const path = join(home, 'gateway.sock');
    // A real dead daemon: a child listens on the path and is SIGKILLed, leaving the file behind.
    const child = spawn(process.execPath, [
      '-e',
      `require('node:net').createServer().listen(${JSON.stringify(path)}, () => console.log('listening'))`,
    ]);
    await once(child.stdout, 'data');
    child.kill('SIGKILL');
    await once(child, 'exit');
    expect(statSync(path).isSocket()).toBe(true);
    const server = await start();
    expect((await identify(server.socketPath)).state).toBe('ready');
  });

  it('refuses to start when another daemon answers, or the path is not a socket', async () => {
    await start();
    await expect(start()).rejects.toThrow(/already answering/);
    await control!.close();
    control = undefined;
    writeFileSync(join(home, 'gateway.sock'), 'precious');
    await expect(start()).rejects.toBeInstanceOf(ControlSocketError);
  });
});
