/**
 * Shared set-up of the seed-verification end-to-end tests: the real daemon (a child process in a temp
 * home) pointed at a demo model that runs in the test process, so every request the model received
 * can be inspected, and held at a barrier when a test needs turns to meet.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import WebSocket from 'ws';
import { hashPassword } from '../../src/domain/auth/password.js';
import { startDemoModel, type DemoModelServer, type RecordedRequest } from '../../src/runtime/demo/server.js';
import { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { httpPost } from '../unit/rpc/harness.js';
import { requireBuild } from './cli.js';
import {
  dropTestSchemas,
  nextEvent,
  startDaemon,
  type Backend,
  type RunningDaemon,
  type SessionEvent,
} from './gateway-harness.js';

export type Snapshot = {
  session_id: string;
  messages: { role: string; content: string | null; tool_calls?: unknown[] }[];
  execution_generation: number;
  prompts: {
    prompt_id: string;
    type: string;
    execution_generation: number;
    command?: string;
    question?: string;
    choices?: string[] | null;
  }[];
  pending_admissions: { admission_id: string; state: string }[];
  running: { admission_id: string; generation: number } | null;
  epoch: number;
  last_seq: number;
  state: string;
  info: Record<string, unknown>;
};

export type ChatBody = {
  model?: string;
  messages: { role: string; content: unknown; tool_call_id?: string }[];
  tools?: { function: { name: string } }[];
};

export interface Fixture {
  /** The demo model of the current test (fresh per test). */
  demo: DemoModelServer;
  /** Starts a daemon whose model is `demo`; stopped after the test. */
  daemon(options?: { home?: string; extraConfig?: string; env?: NodeJS.ProcessEnv }): Promise<RunningDaemon>;
  /** Forgets a daemon the test already stopped or killed. */
  forget(d: RunningDaemon): void;
  /** The store the daemons run on (`store.kind`); a file sets it per `describe.each(BACKENDS)`. */
  store: Backend;
}

/** Registers the per-test demo model and daemon bookkeeping in the calling test file. */
export function useFixture(): Fixture {
  const running: RunningDaemon[] = [];
  let demo: DemoModelServer | null = null;
  beforeAll(requireBuild);
  afterEach(async () => {
    await Promise.all(running.splice(0).map((d) => d.stop()));
    demo?.release();
    await demo?.close();
    demo = null;
    await dropTestSchemas();
  });
  afterAll(() => demo?.close());
  const fixture: Fixture = {
    store: 'sqlite',
    get demo(): DemoModelServer {
      if (!demo) throw new Error('start a daemon first');
      return demo;
    },
    async daemon(options = {}) {
      demo ??= await startDemoModel();
      const config = [
        'model:',
        `  base_url: ${demo.baseUrl}`,
        '  model: gatehouse-demo',
        options.extraConfig ?? '',
      ].join('\n');
      const d = await startDaemon({ home: options.home, env: options.env, config, store: fixture.store });
      running.push(d);
      return d;
    },
    forget(d) {
      running.splice(running.indexOf(d), 1);
    },
  };
  return fixture;
}

export function tempDir(prefix = 'gh-work-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** The chat-completion requests the model received, in arrival order. */
export function chatRequests(demo: DemoModelServer): ChatBody[] {
  return demo.requests
    .filter((r: RecordedRequest) => r.path === '/v1/chat/completions' && r.body !== null)
    .map((r) => r.body as unknown as ChatBody);
}

export function toolNames(body: ChatBody): string[] {
  return (body.tools ?? []).map((t) => t.function.name);
}

/** The content of the last tool message of a request (what the model was told the tool returned). */
export function lastToolResult(body: ChatBody): string {
  const tool = body.messages.filter((m) => m.role === 'tool').at(-1);
  return typeof tool?.content === 'string' ? tool.content : JSON.stringify(tool?.content ?? null);
}

/** Creates a session and attaches the client to it. */
export async function createAttached(
  client: GatewayClient,
  params: Record<string, unknown>,
): Promise<string> {
  const { session_id } = await client.call<Snapshot>('session.create', params);
  await client.call('session.resume', { session_id });
  return session_id;
}

/** Submits `text` and resolves with the client's turn.complete event for that session. */
export async function runTurn(
  client: GatewayClient,
  session_id: string,
  submission_id: string,
  text: string,
  /** How long the turn may take (a case whose model calls may wait out a timeout says so). */
  timeoutMs = 20_000,
): Promise<SessionEvent> {
  const done = nextEvent(client, 'turn.complete', (e) => e.session_id === session_id, timeoutMs);
  await client.call('prompt.submit', { session_id, submission_id, text });
  return done;
}

/**
 * Runs `command` with the demo model's `run: <command>` in a new turn that must complete, and returns
 * what the model was told the terminal returned.
 */
export async function runCommand(
  fx: Fixture,
  client: GatewayClient,
  sessionId: string,
  submissionId: string,
  command: string,
): Promise<string> {
  const done = nextEvent(client, 'turn.complete', (e) => e.session_id === sessionId, 60_000);
  await client.call('prompt.submit', {
    session_id: sessionId,
    submission_id: submissionId,
    text: `run: ${command}`,
  });
  expect((await done).event['outcome']).toBe('completed');
  return lastToolResult(chatRequests(fx.demo).at(-1)!);
}

export const PASSWORD = 'correct horse battery staple';

/** Daemon config lines enabling the dashboard login with PASSWORD (cheap scrypt cost for tests). */
export async function dashboardConfig(): Promise<string> {
  const hash = await hashPassword(PASSWORD, { N: 1 << 10, r: 8, p: 1 });
  return `dashboard:\n  password_hash: ${JSON.stringify(hash)}\n`;
}

/**
 * A daemon with the dashboard on (`extraConfig`, by default just the login) and a native client
 * attached to a new session made with `params` (in a fresh working directory unless they name one).
 */
export async function dashboardSession(
  fx: Fixture,
  params: Record<string, unknown>,
  extraConfig?: string,
): Promise<{ d: RunningDaemon; native: GatewayClient; sessionId: string }> {
  const d = await fx.daemon({ extraConfig: extraConfig ?? (await dashboardConfig()) });
  const native = await d.connect();
  const sessionId = await createAttached(native, { ...params, cwd: params['cwd'] ?? tempDir() });
  return { d, native, sessionId };
}

/** Logs in as the dashboard owner and returns a fresh dashboard ws-ticket. */
export async function dashboardTicket(url: string): Promise<string> {
  const login = await httpPost(url, '/auth/login', { password: PASSWORD }, { origin: url });
  expect(login.status).toBe(200);
  const setCookie = (login.headers['set-cookie'] as string[])[0]!;
  expect(setCookie).toMatch(/HttpOnly/);
  expect(setCookie).toMatch(/SameSite=Strict/);
  const cookie = setCookie.split(';')[0]!;
  const minted = await httpPost(url, '/api/auth/ws-ticket', undefined, { origin: url, cookie });
  expect(minted.status).toBe(200);
  return minted.body['ticket'] as string;
}

export async function dashboardClient(url: string): Promise<GatewayClient> {
  const ticket = await dashboardTicket(url);
  const wsUrl = `${url.replace(/^http/, 'ws')}/api/ws?ticket=${encodeURIComponent(ticket)}`;
  return GatewayClient.open(new WebSocket(wsUrl, [], { origin: url }));
}
