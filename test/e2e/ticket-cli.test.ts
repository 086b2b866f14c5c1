/**
 * `gatehouse ticket` end to end (issue 12 items 6-8): the command exactly as docs/daemon.md and
 * docs/rpc-methods.md show it, its ticket used on a real WebSocket upgrade; a worker-adoption ticket
 * bound to one session reaches that session and nothing else; a full ticket book is reported as
 * what it is.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_TICKETS_PER_PRINCIPAL } from '../../src/domain/auth/tickets.js';
import { requestTicket } from '../../src/surfaces/control/client.js';
import { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import type { ChildProcess } from 'node:child_process';
import { finished, isOneLineError, runCli, spawnCli } from './cli.js';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { nextEvent, startDaemon, useSharedDaemon } from './gateway-harness.js';
import { createAttached, tempDir, useFixture, type Snapshot } from './seed-fixture.js';

const fx = useFixture();

function waitForStderr(child: ChildProcess, text: string): Promise<void> {
  return new Promise((resolve) => {
    let seen = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(text)) resolve();
    });
  });
}

describe('gatehouse ticket', { timeout: 120_000 }, () => {
  // One daemon for the cases that leave its ticket book all but empty; the full-book case has its own.
  let demo: DemoModelServer | null = null;
  afterAll(() => demo?.close());
  const daemon = useSharedDaemon(async () => {
    demo = await startDemoModel();
    return startDaemon({ config: `model: {base_url: ${demo.baseUrl}, model: gatehouse-demo}` });
  });

  it('prints an interactive ticket that opens a WebSocket with operator powers', async () => {
    const d = await daemon();
    const run = await runCli(d.home, ['ticket']);
    expect(run.code).toBe(0);
    const ticket = run.stdout.trim();
    expect(ticket).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const client = await GatewayClient.connect(d.url, ticket);
    const described = await client.call<{ capabilities: string[]; principal: { provider: string } }>(
      'runtime.describe',
      {},
    );
    expect(described.principal.provider).toBe('native');
    expect(described.capabilities).toContain('session:create');
    await client.close();

    const json = await runCli(d.home, ['ticket', '--json']);
    const printed = JSON.parse(json.stdout) as { purpose: string; ticket: string; expires_at: string };
    expect(printed.purpose).toBe('interactive');
    expect(printed.ticket).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(printed.expires_at)).toBeGreaterThan(Date.now());
  });

  it('binds a worker-adoption ticket to the named session: resume, submit, answer; another is refused', async () => {
    const d = await daemon();
    const owner = await d.connect();
    const mine = await createAttached(owner, { cwd: tempDir() });
    const other = await createAttached(owner, { cwd: tempDir() });

    const run = await runCli(d.home, ['ticket', '--purpose', 'worker-adoption', '--session', mine, '--json']);
    expect(run.code).toBe(0);
    const minted = JSON.parse(run.stdout) as { ticket: string; sessions: string[] };
    expect(minted.sessions).toEqual([mine]);
    const worker = await GatewayClient.connect(d.url, minted.ticket);
    const described = await worker.call<{ capabilities: string[] }>('runtime.describe', {});
    expect(described.capabilities).toEqual(['session:read', 'session:submit', 'session:respond']);

    await worker.call<Snapshot>('session.resume', { session_id: mine });
    const asked = nextEvent(worker, 'clarify.request');
    await worker.call('prompt.submit', { session_id: mine, submission_id: 'w1', text: 'ask: which? [a|b]' });
    const question = await asked;
    const done = nextEvent(worker, 'turn.complete');
    await worker.call('clarify.respond', {
      session_id: mine,
      prompt_id: question.event['prompt_id'],
      execution_generation: question.event['execution_generation'],
      answer: 'b',
    });
    expect((await done).event).toMatchObject({ outcome: 'completed' });

    const refused = (call: Promise<unknown>) =>
      expect(call).rejects.toMatchObject({ reason: 'permission_denied' });
    await refused(worker.call('session.resume', { session_id: other }));
    await refused(worker.call('prompt.submit', { session_id: other, submission_id: 'w2', text: 'hi' }));
    await refused(worker.call('session.info', { session_id: 'no-such-session' }));
    await refused(worker.call('session.create', { cwd: tempDir() }));
    const listed = await worker.call<{ sessions: { session_id: string }[] }>('session.list', {
      scope: 'stored',
    });
    expect(listed.sessions.map((s) => s.session_id)).toEqual([mine]);
    await worker.close();
  });

  it('says what to do for a worker ticket without --session and for an unknown session', async () => {
    const d = await daemon();
    const bare = await runCli(d.home, ['ticket', '--purpose', 'worker-adoption']);
    expect(bare.code).not.toBe(0);
    expect(isOneLineError(bare.stderr)).toBe(true);
    expect(bare.stderr).toContain('add --session ID');
    const unknown = await runCli(d.home, ['ticket', '--purpose', 'worker-adoption', '--session', 'nope']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('no session nope');
  });

  it('reports a full ticket book as what happened, and spent tickets free their slots', async () => {
    const d = await fx.daemon();
    const minted: string[] = [];
    // The owner's own share of the book (256 of its 1,024 slots: one principal cannot fill it all).
    for (let i = 0; i < DEFAULT_TICKETS_PER_PRINCIPAL; i++)
      minted.push((await requestTicket(d.layout.controlSocket, 'interactive')).ticket);
    const full = await runCli(d.home, ['ticket']);
    expect(full.code).not.toBe(0);
    expect(isOneLineError(full.stderr)).toBe(true);
    expect(full.stderr).toContain('too many unredeemed tickets');
    expect(full.stderr).not.toContain('unexpected error');
    // A chat meeting the full book says why it waits, and goes on once a slot frees.
    const chat = spawnCli(d.home, ['chat', '--cwd', tempDir()]);
    chat.stdin!.end('hello while the book is full\n');
    const chatRun = finished(chat);
    await waitForStderr(chat, 'waiting for one to free up');
    // Redeeming a ticket releases its slot at once (it no longer counts towards the limit).
    await (await GatewayClient.connect(d.url, minted[0]!)).close();
    const chatted = await chatRun;
    expect(chatted.code).toBe(0);
    expect(chatted.stderr).toContain(
      'gatehouse: note: the gateway refused a ticket: too many unredeemed tickets',
    );
    expect(chatted.stdout).toContain('you said: hello while the book is full');
    const again = await runCli(d.home, ['ticket']);
    expect(again.code).toBe(0);
  });
});
