/**
 * The gateway service: opens the profile's store and a new authority epoch, starts the model (the
 * configured provider, or the built-in demo model on loopback), the local-session service, the RPC
 * listener and the control socket, then runs cold-start recovery before it reports ready.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AgentCache } from '../../domain/agents/agent-cache.js';
import { TicketBook } from '../../domain/auth/tickets.js';
import { creationContract, type LaunchLookups, type LaunchPolicy } from '../../domain/local/launch-policy.js';
import type { CompressionSettings } from '../../runtime/context/prepare.js';
import { defaultContextWindow } from '../../runtime/context/windows.js';
import type { GatehouseConfig } from '../config.js';
import { LocalSessions } from '../../domain/local/service.js';
import { makeTurnJobRunner } from '../../domain/local/turn-job.js';
import { Dispatcher } from '../../protocol/dispatcher.js';
import { FileAlwaysAllowStore } from '../../runtime/approvals/always-store.js';
import { PromptBroker } from '../../runtime/approvals/broker.js';
import { startDemoModel, type DemoModelServer } from '../../runtime/demo/server.js';
import { ModelClient } from '../../runtime/model/client.js';
import { DEFAULT_TOOLSETS, toolRegistry } from '../../runtime/tools/registry.js';
import { SqliteLocalStore } from '../../storage/sqlite/local-store.js';
import { SqliteSessionStore } from '../../storage/sqlite/session-store.js';
import { startControlServer, type ControlServer } from '../../surfaces/control/server.js';
import { registerBuiltinMethods } from '../../surfaces/rpc/builtins.js';
import type { RpcContext } from '../../surfaces/rpc/connection.js';
import { registerSessionMethods } from '../../surfaces/rpc/session-methods.js';
import { startRpcServer, type RpcServer } from '../../surfaces/rpc/server.js';
import { dashboardAssets } from '../../surfaces/dashboard/assets.js';
import { describeGateway } from './describe.js';
import { fileLoginStore } from '../login-file.js';
import type { DaemonContext, DaemonService } from '../daemon.js';
import { DEFAULT_PORT, modelClientLimits } from '../config.js';
import { DaemonError, oneLine } from '../errors.js';
import { listenError } from '../listen-errors.js';
import { faultsFromEnv, type Faults } from '../faults.js';
import { Housekeeping } from '../housekeeping.js';
import { memoryReader, type MemoryRoots } from '../memory.js';
import { isLocalSessionKey } from '../../domain/local/receipt.js';

const DEMO_MODEL_NAME = 'gatehouse-demo';
const CODE_MARKERS = [
  '.git',
  'package.json',
  'pyproject.toml',
  'Cargo.toml',
  'go.mod',
  'pom.xml',
  'Makefile',
];
const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

function launchLookups(skillsDir: string): LaunchLookups {
  return {
    isDirectory: (p) => {
      try {
        return fs.statSync(p).isDirectory();
      } catch {
        return false;
      }
    },
    isCodeWorkspace: (p) => CODE_MARKERS.some((m) => fs.existsSync(path.join(p, m))),
    readSkill: (name) => {
      if (!SKILL_NAME.test(name) || name.includes('..')) return null;
      try {
        return fs.readFileSync(path.join(skillsDir, `${name}.md`), 'utf8');
      } catch {
        return null;
      }
    },
  };
}

function readTls(tls: { cert: string; key: string }, configFile: string): { cert: Buffer; key: Buffer } {
  try {
    return { cert: fs.readFileSync(tls.cert), key: fs.readFileSync(tls.key) };
  } catch (error) {
    throw new DaemonError(
      'listen_failed',
      `cannot read the TLS files of listener.tls (${oneLine(error)}): fix the paths in ${configFile}`,
    );
  }
}

/**
 * Where the gateway service puts what the services after it share (the messaging gateway): the
 * open store, the agent cache, and a hook through which they tell housekeeping which routing
 * entries have live work (a chat lane running a turn).
 */
export interface StoreHolder {
  current: SqliteSessionStore | null;
  agents?: AgentCache | null;
  liveKeys?: ((sessionKey: string) => boolean)[];
}

/**
 * The context window of a session's model: the configured provider's `model.context_window`, a
 * known family's window for a model named elsewhere, or the demo model's window.
 */
function contextWindowFor(config: GatehouseConfig, policy: LaunchPolicy): number {
  if (policy.base_url) return defaultContextWindow(policy.model);
  if (!config.model) return config.demo_model.context_window;
  if (policy.model === config.model.model && config.model.context_window !== undefined)
    return config.model.context_window;
  return defaultContextWindow(policy.model);
}

export function gatewayService(
  options: {
    env?: NodeJS.ProcessEnv;
    storeHolder?: StoreHolder;
    /** Where memory is read (tests lay out a cgroup in a temp dir). */
    memoryRoots?: MemoryRoots;
  } = {},
): DaemonService {
  const env = options.env ?? process.env;
  let store: SqliteSessionStore | null = null;
  let localStore: SqliteLocalStore | null = null;
  let demo: DemoModelServer | null = null;
  let rpc: RpcServer | null = null;
  let control: ControlServer | null = null;
  let sessions: LocalSessions | null = null;
  let epoch = 0;
  let faults: Faults | null = null;
  let ctxLogger: DaemonContext['logger'] | null = null;
  let housekeeping: Housekeeping | null = null;

  return {
    name: 'gateway',
    async start(ctx: DaemonContext) {
      const { config, layout, logger } = ctx;
      ctxLogger = logger;
      faults = faultsFromEnv(env, logger);
      const profile = config.default_profile;
      const profileDir = layout.profileDir(profile);
      fs.mkdirSync(profileDir, { recursive: true, mode: 0o700 });
      store = SqliteSessionStore.open(layout.stateDb(profile), { backgroundCheckpoints: true });
      if (options.storeHolder) options.storeHolder.current = store;
      localStore = new SqliteLocalStore(store.db, () => new Date(), faults);
      localStore.group.onFailure((failure) =>
        logger.error(
          { file: failure.file, reason: failure.reason },
          `${failure.message}: every write is refused until the daemon restarts`,
        ),
      );
      epoch = localStore.openEpoch(ctx.instanceId);
      ctx.advertise({ epoch });

      let baseUrl: string;
      let defaultModel: string;
      let defaultKey: string | undefined;
      if (config.model) {
        baseUrl = config.model.base_url;
        defaultModel = config.model.model;
        defaultKey =
          config.model.api_key ?? (config.model.api_key_env ? env[config.model.api_key_env] : undefined);
      } else {
        demo = await startDemoModel({
          host: '127.0.0.1',
          port: 0,
          record: false,
          contextWindow: config.demo_model.context_window,
        });
        baseUrl = demo.baseUrl;
        defaultModel = DEMO_MODEL_NAME;
      }
      const clients = new Map<string, ModelClient>();
      const modelFor = (url: string, key: string | undefined, model: string): ModelClient => {
        const cacheKey = JSON.stringify([url, key ?? '', model]);
        let client = clients.get(cacheKey);
        if (!client) {
          client = new ModelClient({ baseUrl: url, apiKey: key, model, ...modelClientLimits(config.model) });
          clients.set(cacheKey, client);
        }
        return client;
      };

      const modelOf = (policy: LaunchPolicy, apiKey: string | undefined): ModelClient =>
        policy.base_url
          ? modelFor(policy.base_url, apiKey, policy.model)
          : modelFor(baseUrl, apiKey ?? defaultKey, policy.model);
      const contextSettings = (policy: LaunchPolicy): CompressionSettings => ({
        window: contextWindowFor(config, policy),
        threshold: config.compression.threshold,
        tailTokens: config.compression.tail_tokens,
      });

      const prompts = new PromptBroker({
        alwaysAllow: new FileAlwaysAllowStore(path.join(profileDir, 'always-allow.json')),
        approvalTimeoutMs: config.approvals.timeout_s * 1000,
      });
      const onError = (error: unknown, context: string): void =>
        logger.error({ err: error, context }, context);
      const cacheConfig = config.agent_cache;
      const agents = new AgentCache({
        source: store,
        limits: {
          maxSize: cacheConfig.max_size,
          idleTtlMs: cacheConfig.idle_ttl_s * 1000,
          maxEvictionsPerPass: cacheConfig.max_evictions_per_pass,
          protectRecent: cacheConfig.protect_recent,
        },
      });
      if (options.storeHolder) options.storeHolder.agents = agents;
      sessions = new LocalSessions({
        profile,
        epoch,
        store: localStore,
        sessions: store,
        prompts,
        launchDefaults: {
          cwd: os.homedir(),
          model: defaultModel,
          toolsets: DEFAULT_TOOLSETS,
          knownToolsets: toolRegistry.list().map((t) => t.name),
          maxTurns: 50,
        },
        launchLookups: launchLookups(path.join(profileDir, 'skills')),
        accepting: () => ctx.lifecycle.accepting(),
        maxConcurrentTurns: config.limits.max_concurrent_turns,
        turnTimeoutMs: config.limits.turn_timeout_s * 1000,
        recovery: {
          runningTool: config.recovery.running_tool,
          maxResumes: config.recovery.max_resumes,
          freshnessS: config.recovery.auto_continue_freshness_s,
        },
        replayCapacity: config.events.replay_max_events,
        replayMaxBytes: config.events.replay_max_bytes,
        agents,
        onError,
        fault: (point) => faults?.hit(point),
        compression: { model: modelOf, settings: contextSettings },
        turnRunner: (service) =>
          makeTurnJobRunner({
            sessions: store!,
            prompts,
            tools: (names) => toolRegistry.resolve(names),
            model: modelOf,
            contextSettings,
            compress: (id, reason, signal) => service.compressInSlot(id, reason, signal),
            runningTool: config.recovery.running_tool,
            receipt: (id) => service.validatedReceipt(id),
            apiKey: (id) => service.apiKeyOf(id),
            publish: (id, event) => {
              faults?.observe(event.type);
              service.publish(id, event);
            },
            agentStarted: (id) => service.agentStarted(id),
            fault: (point) => faults?.hit(point),
            agents,
          }),
      });
      // A replaced or rewritten transcript (compression, reset, rewind) drops the cached copy.
      sessions.events.on('transcript:replaced', (e) => agents.invalidate(e.logical_id));

      const dispatcher = new Dispatcher<RpcContext>(logger);
      registerBuiltinMethods(dispatcher, {
        authority: () => ({ instance_id: ctx.instanceId, epoch }),
        creationContract: () => ({
          ...creationContract(),
          defaults: { model: defaultModel, toolsets: [...DEFAULT_TOOLSETS] },
          toolsets: toolRegistry.list().map((t) => t.name),
        }),
        storage: () => {
          const { stats, failed } = localStore!.group;
          return {
            writable: failed === null,
            commit_batches: stats.batches,
            committed_operations: stats.operations,
            log_flushes: stats.flushes,
            inline_flushes: stats.inlineFlushes,
            checkpoints: store?.checkpointer?.stats.checkpoints ?? 0,
            checkpoint_failures: store?.checkpointer?.stats.failures ?? 0,
          };
        },
        agentCache: () => agents.stats(),
        gateway: () =>
          describeGateway(ctx, {
            name: defaultModel,
            demo: demo !== null || defaultModel === DEMO_MODEL_NAME,
          }),
      });
      registerSessionMethods(dispatcher, sessions);
      const tickets = new TicketBook();
      const listen = (port: number): Promise<RpcServer> =>
        startRpcServer({
          host: config.listener.host,
          port,
          dispatcher,
          tickets,
          profile,
          dashboard: { passwordHash: config.dashboard.password_hash ?? null },
          legacyToken:
            config.legacy_token.enabled && config.legacy_token.token
              ? { enabled: true, token: config.legacy_token.token }
              : null,
          internalCredential: randomBytes(32).toString('base64url'),
          allowRemote: config.listener.allow_remote,
          trustedProxies: config.listener.trusted_proxy ?? [],
          health: () => ({
            state: ctx.lifecycle.state,
            epoch,
            // The dashboard page tells a visitor to run `gatehouse passwd` when this is false.
            dashboard_login: config.dashboard.password_hash != null,
          }),
          staticFiles: dashboardAssets().handler,
          loginStore: fileLoginStore(path.join(profileDir, 'dashboard-logins.json'), (err) =>
            logger.warn({ err }, 'could not save the dashboard logins; they end with this run'),
          ),
          tls: config.listener.tls ? readTls(config.listener.tls, ctx.configFile) : null,
          logger,
        });
      const requested = config.listener.port;
      try {
        rpc = await listen(requested ?? DEFAULT_PORT).catch((error: NodeJS.ErrnoException) => {
          // Only the unasked-for default gives way; a port the owner chose is insisted on.
          if (requested !== undefined || error.code !== 'EADDRINUSE') throw error;
          logger.warn({ port: DEFAULT_PORT }, 'the default port is taken; listening on a free port instead');
          return listen(0);
        });
      } catch (error) {
        if (typeof (error as NodeJS.ErrnoException).code === 'string') {
          throw listenError(error as NodeJS.ErrnoException, requested ?? DEFAULT_PORT, ctx);
        }
        throw error;
      }
      const live = sessions;
      rpc.events.on('connection:close', (connection) => live.viewerGone(connection.id));
      // A deliberate stop (SIGTERM/SIGINT, `gatehouse stop`) is announced to every client before
      // the drain, so none mistakes the close that follows for a crash and starts the daemon again.
      const server = rpc;
      ctx.lifecycle.on('lifecycle:draining', (reason) => {
        for (const connection of server.connections) connection.notify('gateway.stopping', { reason });
      });
      ctx.advertise({ url: rpc.url });
      control = await startControlServer({
        socketPath: layout.controlSocket,
        homeRoot: layout.root,
        tickets,
        grant: { subject: 'native:owner', profile },
        sessionExists: (id) => localStore?.getLocalSession(id)?.profile === profile,
        identify: () => ({
          state: ctx.lifecycle.state,
          url: rpc?.url ?? null,
          instance_id: ctx.instanceId,
          epoch,
          profiles: config.profiles,
        }),
        logger,
      });
      const liveKeys = options.storeHolder?.liveKeys ?? [];
      const openStore = store;
      const localSessions = sessions;
      housekeeping = new Housekeeping({
        intervalMs: config.housekeeping.interval_s * 1000,
        agents,
        readMemory: memoryReader(cacheConfig.memory_high_mb, options.memoryRoots),
        releaseIdle: () => localSessions.releaseIdle(),
        maxAgeDays: config.sessions.max_age_days,
        // A local session's route belongs to its identity (its receipt names it): never pruned.
        prune: (maxAgeDays) =>
          openStore.pruneOldEntries({
            maxAgeDays,
            hasLiveProcesses: (key) => isLocalSessionKey(key) || liveKeys.some((isLive) => isLive(key)),
          }),
        afterPass: (report) => {
          ctx.advertise({ agent_cache: agents.stats() });
          if (report.pruned && report.pruned.length > 0)
            logger.info({ pruned: report.pruned }, 'routing entries pruned');
        },
      });
      housekeeping.events.on('housekeeping:error', ({ error }) => onError(error, 'housekeeping pass'));
      housekeeping.start();
      ctx.advertise({ agent_cache: agents.stats() });
      const recovery = sessions.recover();
      logger.info({ ...recovery }, 'recovery done');
      for (const id of recovery.paused)
        logger.error({ session_id: id }, 'session paused: its receipt did not validate');
    },
    async drain(deadline: number) {
      housekeeping?.stop();
      const left = (await sessions?.drain(deadline)) ?? [];
      // Turns still running stay `running` in the store: the next start marks them unknown (REC-2).
      if (left.length > 0) ctxLogger?.warn({ admissions: left }, 'drain deadline passed with turns running');
    },
    async stop() {
      housekeeping?.stop();
      housekeeping = null;
      await control?.close().catch(() => undefined);
      await rpc?.close().catch(() => undefined);
      await demo?.close().catch(() => undefined);
      if (localStore && epoch > 0) localStore.markCleanShutdown(epoch);
      if (options.storeHolder) options.storeHolder.current = null;
      await store?.close().catch(() => undefined);
      control = rpc = demo = null;
      store = null;
      localStore = null;
    },
  };
}
