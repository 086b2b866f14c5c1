/**
 * Starts the real daemon (`gatehouse serve`, the built CLI) as a child process in a temp home, and
 * connects real WebSocket clients with real tickets from its control socket.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { afterAll } from 'vitest';
import { parse } from 'yaml';
import { homeLayout, type HomeLayout } from '../../src/daemon/home.js';
import { requestTicket } from '../../src/surfaces/control/client.js';
import { GatewayClient, type Notification } from '../../src/surfaces/client/rpc-client.js';
import { exited, spawnCli, tempHome, waitForOutput } from './cli.js';
import { createTestSchema, type TestSchema } from '../shared/postgres.js';

/** The stores an end-to-end case can run on (`store.kind`). */
export type Backend = 'sqlite' | 'postgres';
export const BACKENDS: readonly Backend[] = ['sqlite', 'postgres'];

const STORE_URL_ENV = 'GH_E2E_STORE_URL';
/** PostgreSQL schemas of the homes started on postgres: one per home, so a restart finds its data. */
const schemas = new Map<string, TestSchema>();

/**
 * Schemas of homes whose daemons serve several cases (a `describe`'s shared daemon, stopped or killed
 * and started again on the same home): out of dropTestSchemas' reach, still found on a restart.
 */
const keptSchemas = new Map<string, TestSchema>();

/**
 * Keeps the schema of a home started on postgres past dropTestSchemas (which files call after each
 * case), for a daemon that outlives one case; returns what drops it. A no-op on sqlite.
 */
export function keepTestSchema(home: string): () => Promise<void> {
  const schema = schemas.get(home);
  schemas.delete(home);
  if (schema !== undefined) keptSchemas.set(home, schema);
  return async () => {
    keptSchemas.delete(home);
    await schema?.drop();
  };
}

/** Drops the schema of one home started on postgres, if it has one (a fixture's afterAll). */
export async function dropTestSchema(home: string): Promise<void> {
  const schema = schemas.get(home);
  schemas.delete(home);
  await schema?.drop();
}

/** The schema of a home started on postgres; undefined for a home on sqlite. */
export function testSchemaOf(home: string): TestSchema | undefined {
  return schemas.get(home) ?? keptSchemas.get(home);
}

/** The variable holding the URL of the home's schema (for a daemon spawned by hand); {} on sqlite. */
export function storeEnv(home: string): NodeJS.ProcessEnv {
  const schema = schemas.get(home) ?? keptSchemas.get(home);
  return schema === undefined ? {} : { [STORE_URL_ENV]: schema.url };
}

/** Drops the schemas of the homes started on postgres (call it after each test). */
export async function dropTestSchemas(): Promise<void> {
  const all = [...schemas.values()];
  schemas.clear();
  for (const schema of all) await schema.drop();
}

/** The config and environment that put a home's daemon on `backend`, a fresh schema per home. */
async function onBackend(
  home: string,
  backend: Backend,
  config: string | undefined,
  env: NodeJS.ProcessEnv | undefined,
): Promise<{ config: string | undefined; env: NodeJS.ProcessEnv | undefined }> {
  if (backend === 'sqlite') return { config, env };
  let schema = schemas.get(home) ?? keptSchemas.get(home);
  if (!schema) {
    schema = await createTestSchema({ migrated: true });
    schemas.set(home, schema);
  }
  const store = `store: {kind: postgres, url_env: ${STORE_URL_ENV}}`;
  return {
    config: config === undefined ? store : `${config}\n${store}`,
    env: { ...env, [STORE_URL_ENV]: schema.url },
  };
}

export interface RunningDaemon {
  home: string;
  layout: HomeLayout;
  child: ChildProcess;
  url: string;
  epoch: number;
  /** A new viewer connected with a fresh interactive ticket. */
  connect(purpose?: 'interactive' | 'worker-adoption'): Promise<GatewayClient>;
  stop(): Promise<number | null>;
  kill(): Promise<void>;
}

export function writeConfig(home: string, yaml: string): void {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  writeFileSync(homeLayout(home).configFile, yaml, { mode: 0o600 });
}

/**
 * `--port 0` unless the home's config names a listener port (a test of a fixed port): a test daemon
 * never takes the default port 7423 from, or gives way to, the owner's daemon or another test's.
 */
export function testPortArgs(layout: HomeLayout): string[] {
  const config = existsSync(layout.configFile)
    ? (parse(readFileSync(layout.configFile, 'utf8')) as { listener?: { port?: unknown } } | null)
    : null;
  return config?.listener?.port === undefined ? ['--port', '0'] : [];
}

/** A daemon this test file started, as test/e2e/failure-setup.ts reports it when a case fails. */
export interface StartedDaemon {
  home: string;
  layout: HomeLayout;
  child: ChildProcess;
  /** True once the test stopped or killed it while it ran (an exit otherwise is the daemon's own). */
  endedByTest: boolean;
}

/** Whether a child has neither exited nor been ended by a signal. */
export function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Every daemon startDaemon started in the running file (emptied after each file). */
export const startedDaemons: StartedDaemon[] = [];

export async function startDaemon(
  options: {
    home?: string;
    env?: NodeJS.ProcessEnv;
    config?: string;
    store?: Backend;
    /** Extra `serve` options (`--log-stderr`, say). */
    args?: string[];
  } = {},
): Promise<RunningDaemon> {
  const home = options.home ?? tempHome();
  const { config, env } = await onBackend(home, options.store ?? 'sqlite', options.config, options.env);
  if (config !== undefined) writeConfig(home, config);
  const layout = homeLayout(home);
  const child = spawnCli(home, ['serve', ...testPortArgs(layout), ...(options.args ?? [])], env);
  child.stdin!.end();
  const started: StartedDaemon = { home, layout, child, endedByTest: false };
  startedDaemons.push(started);
  await waitForOutput(child, 'Gatehouse is ready at');
  const info = JSON.parse(readFileSync(layout.gatewayJson, 'utf8')) as { url: string; epoch: number };
  const clients: GatewayClient[] = [];
  return {
    home,
    layout,
    child,
    url: info.url,
    epoch: info.epoch,
    async connect(purpose = 'interactive') {
      const { ticket } = await requestTicket(layout.controlSocket, purpose);
      const client = await GatewayClient.connect(info.url, ticket);
      clients.push(client);
      return client;
    },
    async stop() {
      started.endedByTest ||= isRunning(child);
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      return exited(child);
    },
    async kill() {
      started.endedByTest ||= isRunning(child);
      child.kill('SIGKILL');
      await exited(child);
    },
  };
}

/**
 * One daemon for the cases of the calling `describe` block, started by `start` at the first case that
 * asks for it and stopped (its PostgreSQL schema dropped) after the block: for cases that are each
 * refused or only read, where a fresh daemon per case proves nothing more and costs a start each.
 * Its schema is kept out of dropTestSchemas, which files call after each case.
 */
export function useSharedDaemon(start: () => Promise<RunningDaemon>): () => Promise<RunningDaemon> {
  let shared: Promise<{ daemon: RunningDaemon; drop: () => Promise<void> }> | null = null;
  afterAll(async () => {
    const started = await shared?.catch(() => null);
    shared = null;
    await started?.daemon.stop();
    await started?.drop();
  });
  return async () => {
    shared ??= start().then((daemon) => ({ daemon, drop: keepTestSchema(daemon.home) }));
    return (await shared).daemon;
  };
}

/** Polls GET /healthz (there is no event across processes) until the daemon reports `state`. */
export async function waitForState(url: string, state: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const health = (await fetch(`${url}/healthz`).then((r) => r.json())) as { state?: string };
    if (health.state === state) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`daemon did not reach ${state} within ${timeoutMs} ms`);
}

export type SessionEvent = {
  session_id: string;
  epoch: number;
  seq: number;
  event: { type: string; [k: string]: unknown };
};

export function sessionEvent(n: Notification): SessionEvent | null {
  return n.method === 'session.event' ? (n.params as SessionEvent) : null;
}

/** Resolves with the next session event of `type` (and matching `where`) the client receives. */
export function nextEvent(
  client: GatewayClient,
  type: string,
  where: (e: SessionEvent) => boolean = () => true,
  timeoutMs = 20_000,
): Promise<SessionEvent> {
  return client
    .next((n) => {
      const e = sessionEvent(n);
      return e !== null && e.event.type === type && where(e);
    }, timeoutMs)
    .then((n) => sessionEvent(n)!);
}

/**
 * Resumes the session until its snapshot satisfies `done`, waiting on admission.settled between
 * snapshots. The wait is armed before each snapshot is asked for: a settlement committed while the
 * snapshot is read is announced to this viewer (attached first) before the snapshot's answer
 * arrives, and a wait armed only after the answer would wait for an event already gone. A wait on
 * the next settlement fails after `timeoutMs` without one.
 */
export async function resumeUntil<S extends { pending_admissions: unknown[] }>(
  client: GatewayClient,
  sessionId: string,
  done: (snapshot: S) => boolean,
  timeoutMs = 20_000,
): Promise<S> {
  for (;;) {
    const settled = nextEvent(client, 'admission.settled', (e) => e.session_id === sessionId, timeoutMs).then(
      () => null,
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    const snapshot = await client.call<S>('session.resume', { session_id: sessionId });
    if (done(snapshot)) return snapshot;
    const failed = await settled;
    if (failed !== null)
      throw new Error(
        `session ${sessionId} did not settle (${failed}): ${JSON.stringify(snapshot.pending_admissions)}`,
      );
  }
}
