/**
 * The daemon: a composition of services run under one lifecycle. It owns the home's pid file,
 * starts services in order (rolling back those already started when one fails), advertises itself
 * in run/gateway.json once every service is up, and on SIGTERM/SIGINT drains then stops them in
 * reverse order before removing its files. Services are the only extension point: the RPC server,
 * the control socket, the store and the runtime each plug in as one.
 */
import { randomUUID } from 'node:crypto';
import type { AdapterStatus } from '../domain/messaging/adapter.js';
import type { AgentCacheStats } from '../domain/agents/agent-cache.js';
import type { ClusterView } from '../domain/cluster/member.js';
import { DaemonError, oneLine } from './errors.js';
import type { GatehouseConfig } from './config-schema.js';
import { describeModel } from './config.js';
import { ensureHomeDirs, tightenHome, writeFileAtomic, type HomeLayout } from './home.js';
import { Lifecycle } from './lifecycle.js';
import type { Logger } from './logger.js';
import { acquirePidFile, removeQuietly } from './pidfile.js';

/** What gateway.json tells clients: how to reach this daemon and which authority it holds. */
export interface GatewayInfo {
  pid: number;
  url: string | null;
  instance_id: string;
  /** The authority epoch; filled by the store service (a placeholder until it exists). */
  epoch: number | null;
  started_at: string;
  home: string;
  profiles: string[];
  model: string;
  /** Each chat platform adapter's state; empty when no platform is enabled. Kept current while running. */
  adapters: AdapterStatus[];
  /** The agent cache's counters, as of the last housekeeping pass (docs/agent-cache.md). */
  agent_cache?: AgentCacheStats;
  /** The store the daemon opened (`sqlite (…/state.db)`, `postgres (schema …, URL from $VAR)`). */
  store?: string;
  /** With `cluster.enabled`: the cluster as of this instance's last scan (docs/cluster.md). */
  cluster?: ClusterView;
  /** Scheduled jobs: each one's next and last run and its outcome, as of the last pass (docs/scheduling.md). */
  jobs?: JobStatus[];
}

/** One scheduled job as `gatehouse status` shows it. */
export interface JobStatus {
  job_id: string;
  name: string | null;
  schedule: string;
  state: string;
  next_run: string | null;
  last_run: { instant: string; outcome: string | null; state: string } | null;
  failures: number;
  paused_reason: string | null;
}

/**
 * The fields services fill in. Once the daemon is ready, advertising again rewrites gateway.json
 * (atomically), so `gatehouse status` sees an adapter's state change without asking the daemon.
 */
export type Advertised = Partial<
  Pick<GatewayInfo, 'url' | 'epoch' | 'adapters' | 'agent_cache' | 'store' | 'cluster' | 'jobs'>
>;

export interface DaemonContext {
  readonly layout: HomeLayout;
  readonly config: GatehouseConfig;
  readonly configFile: string;
  readonly logger: Logger;
  readonly lifecycle: Lifecycle;
  readonly instanceId: string;
  /** What gateway.json says (start time, model, adapters), kept current; read-only for services. */
  readonly info: Readonly<GatewayInfo>;
  advertise(fields: Advertised): void;
  /**
   * A service can no longer run safely (a cluster member lost its database): the daemon drains and
   * stops as for a signal, and exits with a non-zero code so that a supervisor restarts it.
   */
  fail(reason: string): void;
}

export interface DaemonService {
  readonly name: string;
  /** Acquire resources. Throw a DaemonError with a one-line, actionable message on failure. */
  start(ctx: DaemonContext): Promise<void>;
  /** Stop taking new work and let running work finish; `deadline` is an epoch-ms bound. */
  drain(deadline: number): Promise<void>;
  /** Release everything. Called after drain, and on start-up rollback (without drain). */
  stop(): Promise<void>;
}

export interface RunDaemonOptions {
  readonly layout: HomeLayout;
  readonly config: GatehouseConfig;
  readonly configFile: string;
  readonly logger: Logger;
  readonly services: readonly DaemonService[];
  /**
   * Install SIGTERM/SIGINT handlers (the CLI does; in-process tests call shutdown()). After a stop
   * they stay installed, answering later signals with the finished stop: the caller exits once
   * `done` resolves.
   */
  readonly handleSignals?: boolean;
}

export interface DaemonHandle {
  readonly lifecycle: Lifecycle;
  readonly info: GatewayInfo;
  /** Drain and stop; resolves with the exit code. Calling it twice skips the rest of the drain. */
  shutdown(reason: string): Promise<number>;
  /** Resolves with the exit code once stopped. */
  readonly done: Promise<number>;
}

/** Starts every service; resolves once ready, or rejects (after rolling back) with a DaemonError. */
export async function runDaemon(options: RunDaemonOptions): Promise<DaemonHandle> {
  const { layout, config, logger, services } = options;
  ensureHomeDirs(layout);
  const loosened = tightenHome(layout);
  if (loosened.length > 0) {
    logger.warn(
      { count: loosened.length, paths: loosened.slice(0, 20) },
      'made files in the home owner-only',
    );
  }
  acquirePidFile(layout);
  removeQuietly(layout.gatewayJson); // left by a crashed run; this one writes its own once ready

  const lifecycle = new Lifecycle();
  const info: GatewayInfo = {
    pid: process.pid,
    url: null,
    instance_id: randomUUID(),
    epoch: null,
    started_at: new Date().toISOString(),
    home: layout.root,
    profiles: [...config.profiles],
    model: describeModel(config),
    adapters: [],
  };
  // True between the first write of gateway.json (ready) and its removal (stopped).
  let published = false;
  const publish = () => writeFileAtomic(layout.gatewayJson, `${JSON.stringify(info, null, 2)}\n`, 0o600);
  const ctx: DaemonContext = {
    layout,
    config,
    configFile: options.configFile,
    logger,
    lifecycle,
    instanceId: info.instance_id,
    info,
    fail: (reason) => {
      failed = true;
      logger.error({ reason }, 'gateway stopping after a failure');
      void shutdown(`failure: ${reason}`);
    },
    advertise: (fields) => {
      Object.assign(info, fields);
      if (!published) return;
      try {
        publish();
      } catch (error) {
        logger.warn({ err: error }, 'could not rewrite gateway.json');
      }
    },
  };

  let stopRequested: string | undefined;
  /** Set by ctx.fail(): the exit code is non-zero whatever the stop does. */
  let failed = false;
  let shuttingDown: Promise<number> | undefined;
  let skipDrain: (() => void) | undefined;
  let resolveDone!: (code: number) => void;
  const done = new Promise<number>((resolve) => (resolveDone = resolve));
  const started: DaemonService[] = [];

  const onSignal = (signal: NodeJS.Signals) => void shutdown(signal);
  const removeSignalHandlers = () => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  };
  if (options.handleSignals) {
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }

  async function finish(): Promise<number> {
    let code = failed ? 1 : 0;
    for (const service of [...started].reverse()) {
      try {
        await service.stop();
      } catch (error) {
        code = 1;
        logger.error({ service: service.name, err: error }, 'service failed to stop');
      }
    }
    published = false;
    removeQuietly(layout.gatewayJson);
    removeQuietly(layout.pidFile);
    // The signal handlers stay until the process exits (the CLI exits once `done` resolves): a
    // second signal that arrives now (a supervisor's or a test's stop sent while the first one
    // drained) finds the stop done and changes nothing. Removed, they would leave it the default
    // action, and a clean drain would end as a death by SIGTERM instead of exit 0 (REC-6).
    lifecycle.apply({ type: 'stopped' });
    logger.info({ code }, 'gateway stopped');
    resolveDone(code);
    return code;
  }

  async function drainAll(reason: string): Promise<void> {
    const deadline = Date.now() + config.drain_timeout_s * 1000;
    logger.info({ reason, drain_timeout_s: config.drain_timeout_s }, 'gateway draining');
    let timer: NodeJS.Timeout | undefined;
    const cut = new Promise<'cut'>((resolve) => {
      timer = setTimeout(() => resolve('cut'), Math.max(0, deadline - Date.now()));
      skipDrain = () => resolve('cut');
    });
    const drains = Promise.allSettled(
      [...started].reverse().map(async (service) => {
        try {
          await service.drain(deadline);
        } catch (error) {
          logger.error({ service: service.name, err: error }, 'service failed to drain');
        }
      }),
    );
    if ((await Promise.race([drains, cut])) === 'cut') {
      logger.warn('drain deadline reached or a second signal arrived; stopping with work still running');
    }
    clearTimeout(timer);
  }

  let startCut: NodeJS.Timeout | undefined;
  let abandoned = false;
  /** Stops what has started, removes the run files and ends the process (exit code 1). */
  function abandonStart(): void {
    if (abandoned) return;
    abandoned = true;
    clearTimeout(startCut);
    logger.warn(
      { reason: stopRequested },
      'stop requested while starting, and a service is still starting: stopping without it',
    );
    void rollback(started, logger).then(() => {
      removeQuietly(layout.pidFile);
      removeSignalHandlers();
      lifecycle.apply({ type: 'fail', error: 'stopped while starting' });
      resolveDone(1);
      if (options.handleSignals) process.exit(1);
    });
  }

  function shutdown(reason: string): Promise<number> {
    if (shuttingDown) {
      skipDrain?.();
      return shuttingDown;
    }
    if (lifecycle.state === 'starting') {
      // The stop waits for the start to end, then drains. A service whose start does not end (a
      // chat platform that cannot be reached) must not make the stop wait forever: after
      // drain_timeout_s, or at a second signal, the start is given up on.
      if (stopRequested !== undefined) abandonStart();
      else {
        stopRequested = reason;
        startCut = setTimeout(abandonStart, config.drain_timeout_s * 1000);
      }
      return done;
    }
    lifecycle.apply({ type: 'drain', reason });
    shuttingDown = drainAll(reason).then(finish);
    return shuttingDown;
  }

  try {
    for (const service of services) {
      if (stopRequested !== undefined) break;
      await startService(service, ctx);
      started.push(service);
    }
  } catch (error) {
    if (abandoned) throw error;
    await rollback(started, logger);
    removeQuietly(layout.pidFile);
    removeSignalHandlers();
    lifecycle.apply({ type: 'fail', error: oneLine(error) });
    logger.error({ err: error }, 'gateway failed to start');
    resolveDone(1); // a shutdown requested while starting is waiting on this
    throw error;
  }

  clearTimeout(startCut);
  if (abandoned) return { lifecycle, info, shutdown, done };
  if (stopRequested !== undefined) {
    lifecycle.apply({ type: 'drain', reason: stopRequested });
    shuttingDown = drainAll(stopRequested).then(finish);
  } else {
    publish();
    published = true;
    lifecycle.apply({ type: 'ready' });
    logger.info({ url: info.url, epoch: info.epoch, instance_id: info.instance_id }, 'gateway ready');
  }
  return { lifecycle, info, shutdown, done };
}

async function startService(service: DaemonService, ctx: DaemonContext): Promise<void> {
  try {
    await service.start(ctx);
    ctx.logger.info({ service: service.name }, 'service started');
  } catch (error) {
    if (error instanceof DaemonError) throw error;
    throw new DaemonError('service_failed', `${service.name} failed to start: ${oneLine(error)}`, {
      cause: error,
    });
  }
}

async function rollback(started: DaemonService[], logger: Logger): Promise<void> {
  for (const service of [...started].reverse()) {
    try {
      await service.stop();
    } catch (error) {
      logger.error({ service: service.name, err: error }, 'service failed to stop during rollback');
    }
  }
}
