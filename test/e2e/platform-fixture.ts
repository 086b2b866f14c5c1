/**
 * The scaffolding every chat-platform e2e file shares: the real daemon (`gatehouse serve` as a child
 * process) with one platform adapter pointed at that platform's loopback stand-in and its model at
 * the demo model running in the test process. `usePlatformDaemon()` registers beforeAll/afterAll for
 * one file: one stand-in, one demo model, one temp home; the test starts (and may kill and restart)
 * the daemon itself. The per-platform fixtures (slack-, discord-, telegram-fixture.ts) add the ways
 * of talking to their stand-in on top.
 */
import fs from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { requireBuild, tempHome } from './cli.js';
import {
  dropTestSchema,
  startDaemon,
  storeEnv,
  writeConfig,
  type Backend,
  type RunningDaemon,
} from './gateway-harness.js';

/** What one platform's fixture tells the shared scaffolding. */
export interface PlatformSpec<S extends { close(): Promise<void> }> {
  /** The key under `platforms:` (`slack`, `discord`, `telegram`). */
  readonly platform: string;
  startStandIn(): Promise<S>;
  /** The lines under `platforms.<platform>:` that point the adapter at the stand-in (indented). */
  standInYaml(standIn: S): string[];
  /** The environment carrying the stand-in's tokens. */
  tokenEnv(standIn: S): NodeJS.ProcessEnv;
  /** Extra lines under `platforms.<platform>:` (indented by the caller), or a function giving them
   * when the home is written (after the file's earlier beforeAll hooks ran). */
  readonly platformYaml?: string[] | (() => string[]) | undefined;
  /** Top-level config lines. */
  readonly yaml?: string[] | undefined;
  /** Frees whatever the test held back in the stand-in, so a last stop can drain. */
  releaseStandIn?(standIn: S): void;
  /** The backend the daemon stores on (default sqlite; postgres gets a schema of its own, dropped in
   * afterAll). */
  readonly store?: Backend | undefined;
}

export interface PlatformDaemon<S> {
  readonly standIn: S;
  readonly model: DemoModelServer;
  readonly home: string;
  /** The daemon started last, or null after kill() or stop(). */
  readonly daemon: RunningDaemon | null;
  /**
   * `env`: extra environment for this daemon only (a TZ, say). Resolves once the platform runs (it
   * connects in the background after the daemon is ready), unless `connected` is false.
   */
  start(env?: NodeJS.ProcessEnv, options?: { connected?: boolean }): Promise<RunningDaemon>;
  /** Rewrites the config with these top-level lines instead of `yaml`; the next start reads it. */
  reconfigure(yaml: readonly string[]): void;
  /** The environment `gatehouse serve` needs in this home (the token; the store URL on postgres). */
  serveEnv(): NodeJS.ProcessEnv;
  /** SIGKILL: no drain, no clean-shutdown marker. */
  kill(): Promise<void>;
  /** Graceful stop (SIGTERM); resolves with the exit code. */
  stop(): Promise<number | null>;
  /** The user messages of the (last) model request whose newest user message carries `marker`. */
  userMessages(marker: string): string[];
  /** How many model requests had `text` as their newest user message. */
  asked(text: string): number;
  /** The messages of the last model request containing `marker`, as JSON text. */
  requestTexts(marker: string): string;
}

export function usePlatformDaemon<S extends { close(): Promise<void> }>(
  spec: PlatformSpec<S>,
): PlatformDaemon<S> {
  let standIn: S;
  let model: DemoModelServer;
  let home: string;
  let daemon: RunningDaemon | null = null;
  let current: readonly string[] = spec.yaml ?? [];

  const configText = (yaml: readonly string[]): string =>
    [
      'model:',
      `  base_url: ${model.baseUrl}`,
      '  model: gatehouse-demo',
      ...yaml,
      'platforms:',
      `  ${spec.platform}:`,
      ...spec.standInYaml(standIn),
      ...(typeof spec.platformYaml === 'function' ? spec.platformYaml() : (spec.platformYaml ?? [])),
      '',
    ].join('\n');

  beforeAll(async () => {
    requireBuild();
    standIn = await spec.startStandIn();
    model = await startDemoModel();
    home = tempHome();
    writeConfig(home, configText(current));
  });

  afterAll(async () => {
    model.release();
    spec.releaseStandIn?.(standIn);
    await daemon?.stop();
    await standIn.close();
    await model.close();
    await dropTestSchema(home);
    fs.rmSync(home, { recursive: true, force: true });
  });

  return {
    get standIn() {
      return standIn;
    },
    get model() {
      return model;
    },
    get home() {
      return home;
    },
    get daemon() {
      return daemon;
    },
    async start(extra = {}, options = {}) {
      // On postgres the harness adds the store line to the config it is given.
      daemon = await startDaemon({
        home,
        env: { ...extra, ...spec.tokenEnv(standIn) },
        config: configText(current),
        store: spec.store ?? 'sqlite',
      });
      if (options.connected !== false) await platformRunning(daemon);
      return daemon;
    },
    reconfigure(yaml) {
      current = yaml;
      writeConfig(home, configText(yaml));
    },
    serveEnv() {
      return { ...storeEnv(home), ...spec.tokenEnv(standIn) };
    },
    async kill() {
      await daemon?.kill();
      daemon = null;
    },
    async stop() {
      const code = (await daemon?.stop()) ?? null;
      daemon = null;
      return code;
    },
    userMessages(marker) {
      const request = [...model.requests].reverse().find((r) => userTexts(r).at(-1)?.includes(marker));
      if (request === undefined) throw new Error(`no model request answered "${marker}"`);
      return userTexts(request);
    },
    asked(text) {
      return model.requests.filter((r) => userTexts(r).at(-1) === text).length;
    },
    requestTexts(marker) {
      const request = [...model.requests]
        .reverse()
        .find((r) => JSON.stringify(r.body?.messages ?? []).includes(marker));
      if (request === undefined) throw new Error(`no model request carried "${marker}"`);
      return JSON.stringify(request.body!.messages!);
    },
  };
}

/** Resolves once gateway.json says every platform adapter runs (each writes it as its state changes). */
async function platformRunning(daemon: RunningDaemon): Promise<void> {
  const running = () => {
    const info = JSON.parse(fs.readFileSync(daemon.layout.gatewayJson, 'utf8')) as {
      adapters?: { state: string }[];
    };
    return (info.adapters ?? []).length > 0 && info.adapters!.every((a) => a.state === 'running');
  };
  const deadline = Date.now() + 60_000;
  while (!running()) {
    if (daemon.child.exitCode !== null) throw new Error('the daemon exited before its platform ran');
    if (Date.now() > deadline)
      throw new Error(
        `the platform did not run within 60 s: ${fs.readFileSync(daemon.layout.gatewayJson, 'utf8')}\n${daemonLogTail(daemon)}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The daemon log's last lines at warn or above, and its last few lines, for a failed wait's message. */
export function daemonLogTail(daemon: RunningDaemon | null, lines = 12): string {
  if (daemon === null || !fs.existsSync(daemon.layout.logFile)) return 'no daemon log';
  const all = fs.readFileSync(daemon.layout.logFile, 'utf8').split('\n').filter(Boolean);
  const warned = all.filter((line) => /"level":(4|5|6)\d/.test(line)).slice(-lines);
  return `the daemon log's warnings:\n${warned.join('\n')}\nits last lines:\n${all.slice(-lines).join('\n')}`;
}

/** `wait`, its failure carrying the daemon log's tail. */
export function withDaemonLog<T>(daemon: () => RunningDaemon | null, wait: Promise<T>): Promise<T> {
  return wait.catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`${message}\n${daemonLogTail(daemon())}`, { cause: error });
  });
}

function userTexts(r: DemoModelServer['requests'][number]): string[] {
  return (r.body?.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content));
}
