/**
 * The RPC the dashboard reads (issue 13): `session.list` with scope "all" (local and chat-platform
 * sessions by recent activity, paged, with state and token counts), `session.messages` and
 * `session.resume`'s `message_limit` (long transcripts a page at a time), `runtime.describe`'s
 * gateway block, and the `gatehouse dashboard` / `gatehouse status` lines — against the real daemon.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SessionSource } from '../../src/domain/session/source.js';
import { buildSessionKey } from '../../src/domain/session/key.js';
import { SqliteSessionStore } from '../../src/storage/sqlite/session-store.js';
import { runCli } from './cli.js';
import {
  createAttached,
  dashboardClient,
  dashboardConfig,
  dashboardSession,
  runTurn,
  type Snapshot,
  tempDir,
  useFixture,
} from './seed-fixture.js';

const fx = useFixture();

type Listed = {
  session_id: string;
  kind: string;
  source: string;
  platform: string | null;
  title: string | null;
  state: string;
  last_activity: string;
  tokens: { input: number; output: number; total: number };
};
type ListPage = { sessions: Listed[]; next_cursor: string | null };

describe('session.list scope "all"', () => {
  it('lists local sessions of every visible source and chat-platform sessions by recent activity, a page at a time', async () => {
    const d = await fx.daemon({ extraConfig: await dashboardConfig() });
    const native = await d.connect();
    const a = await createAttached(native, { cwd: tempDir(), title: 'A' });
    const b = await createAttached(native, { cwd: tempDir(), title: 'B', source: 'gui' });
    await createAttached(native, { cwd: tempDir(), title: 'hidden', source: 'tool' });
    await runTurn(native, a, 's1', 'make A the most recent');

    // A chat-platform session, written by the platform gateway's own store operations.
    const store = SqliteSessionStore.open(d.layout.stateDb('default'));
    const source = new SessionSource({ platform: 'telegram', chat_id: '42', chat_name: 'Ops chat' });
    const access = await store.getOrCreateSession(buildSessionKey(source.toJSON()), source.toJSON(), {
      now: new Date(Date.now() + 60_000),
    });
    await store.close();

    const dashboard = await dashboardClient(d.url);
    const first = await dashboard.call<ListPage>('session.list', { scope: 'all', limit: 2 });
    expect(first.sessions.map((s) => s.title)).toEqual(['Ops chat', 'A']);
    expect(first.sessions[0]).toMatchObject({
      session_id: access.entry.session_id,
      kind: 'platform',
      platform: 'telegram',
      state: 'idle',
    });
    expect(first.sessions[1]).toMatchObject({ session_id: a, kind: 'local', source: 'cli', state: 'idle' });
    expect(first.sessions[1]!.tokens.total).toBeGreaterThan(0);
    expect(first.next_cursor).not.toBeNull();
    const second = await dashboard.call<ListPage>('session.list', {
      scope: 'all',
      limit: 2,
      cursor: first.next_cursor,
    });
    expect(second.sessions.map((s) => [s.session_id, s.source])).toEqual([[b, 'gui']]);
    expect(second.next_cursor).toBeNull();

    await expect(
      dashboard.call('session.list', { scope: 'all', cursor: 'not-a-cursor' }),
    ).rejects.toMatchObject({ reason: 'invalid_params' });
    const platformPage = await dashboard.call<{ messages: unknown[] }>('session.messages', {
      session_id: access.entry.session_id,
    });
    expect(platformPage.messages).toEqual([]);
  });
});

describe('long transcripts a page at a time', () => {
  it('resume with message_limit shows the newest page; session.messages walks back to the first message', async () => {
    const { d, sessionId: id } = await dashboardSession(fx, { title: 'long' });
    const store = SqliteSessionStore.open(d.layout.stateDb('default'));
    const messages = Array.from({ length: 10_000 }, (_, i) => ({
      role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
      content: `message ${i}`,
    }));
    await store.appendToTranscript(id, messages);
    await store.close();

    const dashboard = await dashboardClient(d.url);
    const snapshot = await dashboard.call<Snapshot & { messages_truncated: boolean }>('session.resume', {
      session_id: id,
      message_limit: 100,
    });
    expect(snapshot.messages).toHaveLength(100);
    expect(snapshot.messages_truncated).toBe(true);
    expect(snapshot.messages.at(-1)!.content).toBe('message 9999');

    let oldest = (snapshot.messages[0] as unknown as { id: number }).id;
    let seen = snapshot.messages.length;
    let pages = 0;
    for (;;) {
      const page = await dashboard.call<{ messages: { id: number; content: string }[]; has_more: boolean }>(
        'session.messages',
        { session_id: id, before_id: oldest, limit: 1000 },
      );
      pages++;
      seen += page.messages.length;
      oldest = page.messages[0]!.id;
      if (!page.has_more) {
        expect(page.messages[0]!.content).toBe('message 0');
        break;
      }
    }
    expect([seen, pages]).toEqual([10_000, 10]);
    await expect(dashboard.call('session.messages', { session_id: 'no-such-session' })).rejects.toMatchObject(
      { reason: 'not_found' },
    );
  });
});

describe('what the status views read', () => {
  it(
    'runtime.describe has the gateway block; gatehouse dashboard and status print the page URL',
    { timeout: 90_000 },
    async () => {
      const d = await fx.daemon({ extraConfig: await dashboardConfig() });
      const client = await d.connect();
      const describe = await client.call<{
        gateway: {
          version: string;
          uptime_s: number;
          model: { name: string; demo: boolean };
          platforms: unknown[];
        };
        session_create: { defaults: { model: string; toolsets: string[] }; toolsets: string[] };
      }>('runtime.describe', {});
      expect(describe.gateway).toMatchObject({
        version: expect.any(String) as string,
        model: { name: 'gatehouse-demo', demo: true },
        platforms: [],
      });
      expect(describe.session_create.defaults.model).toBe('gatehouse-demo');
      expect(describe.session_create.toolsets).toEqual(
        expect.arrayContaining(describe.session_create.defaults.toolsets),
      );
      const health = (await (await fetch(`${d.url}/healthz`)).json()) as Record<string, unknown>;
      expect(health['dashboard_login']).toBe(true);

      const printed = await runCli(d.home, ['dashboard']);
      expect(printed).toMatchObject({ code: 0, stdout: `${d.url}/\n` });
      const opened = await runCli(d.home, ['dashboard', '--open'], { env: { PATH: tempDir() } });
      expect(opened.code).toBe(1);
      expect(opened.stdout).toBe(`${d.url}/\n`);
      expect(opened.stderr).toContain(
        `could not open a browser (xdg-open is missing or failed); open ${d.url}/ yourself`,
      );
      // With a desktop: xdg-open (here a stand-in that notes what it was given) gets the URL.
      const desktop = tempDir();
      const asked = join(desktop, 'asked.txt');
      writeFileSync(join(desktop, 'xdg-open'), `#!/bin/sh\nprintf '%s' "$1" > ${asked}\n`, { mode: 0o755 });
      const browsed = await runCli(d.home, ['dashboard', '--open'], {
        env: { PATH: `${desktop}:${process.env['PATH']}` },
      });
      expect(browsed).toMatchObject({ code: 0, stdout: `${d.url}/\n`, stderr: '' });
      await expect.poll(() => existsSync(asked) && readFileSync(asked, 'utf8')).toBe(`${d.url}/`);
      const status = await runCli(d.home, ['status']);
      expect(status.stdout).toContain(`dashboard: ${d.url}/`);
      const json = JSON.parse((await runCli(d.home, ['status', '--json'])).stdout) as Record<string, unknown>;
      expect(json).toMatchObject({ url: d.url, dashboard: `${d.url}/` });
    },
  );

  it('gatehouse dashboard says to start the gateway when it is not running', async () => {
    const stopped = await runCli(tempDir(), ['dashboard']);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toContain('the gateway is not running');
    const json = JSON.parse((await runCli(tempDir(), ['status', '--json'])).stdout) as Record<
      string,
      unknown
    >;
    expect(json).toMatchObject({ running: false, dashboard: null });
  });
});
