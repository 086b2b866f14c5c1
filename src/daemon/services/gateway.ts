/**
 * The gateway service: opens the profile's store and a new authority epoch, starts the runtime
 * both engines share (runtime.ts: the configured providers or the built-in demo model on loopback,
 * the prompt brokers), the local-session service, the RPC listener and the control socket, then
 * runs cold-start recovery before it reports ready.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AgentCache } from '../../domain/agents/agent-cache.js';
import { TicketBook } from '../../domain/auth/tickets.js';
import { creationContract, type LaunchPolicy } from '../../domain/local/launch-policy.js';
import type { CompressionSettings } from '../../runtime/context/prepare.js';
import { LocalSessions } from '../../domain/local/service.js';
import { makeTurnJobRunner } from '../../domain/local/turn-job.js';
import { Dispatcher } from '../../protocol/dispatcher.js';
import type { PromptBroker } from '../../runtime/approvals/broker.js';
import type { ChatModel } from '../../runtime/model/client.js';
import { gitRefusal } from '../../runtime/checkpoints/git.js';
import { CheckpointStore } from '../../runtime/checkpoints/store.js';
import { openTurnLifecycle } from '../../runtime/lifecycle/session-lifecycle.js';
import { DEFAULT_TOOLSETS, toolRegistry } from '../../runtime/tools/registry.js';
import { toolEnvironment } from '../../runtime/tools/env.js';
import { withAgentJobs } from '../../runtime/tools/jobs.js';
import { agentJobs } from './agent-jobs.js';
import { toolSessionIds } from '../../runtime/tools/process-group.js';
import { spawnedPeerCheck } from '../spawned-peer.js';
import { guardGatewayFiles, withToolEnvironment } from '../../runtime/tools/reach.js';
import type { LocalSessionStore } from '../../domain/ports/local-store.js';
import type { SessionStore } from '../../domain/ports/session-store.js';
import type { AccessStore } from '../../domain/ports/access-store.js';
import type { MessagingStores } from '../../domain/ports/messaging-stores.js';
import { startControlServer, type ControlServer } from '../../surfaces/control/server.js';
import { registerBuiltinMethods } from '../../surfaces/rpc/builtins.js';
import type { RpcContext } from '../../surfaces/rpc/connection.js';
import { registerApprovalMethods } from '../../surfaces/rpc/approval-methods.js';
import { registerAccessMethods } from '../../surfaces/rpc/access-methods.js';
import { accessHooks } from '../../surfaces/rpc/audit.js';
import { memberLimits } from '../config-auth.js';
import { chatMembersOf, homeChannelsOf } from '../config-platforms.js';
import { registerSessionMethods } from '../../surfaces/rpc/session-methods.js';
import { registerJobMethods } from '../../surfaces/rpc/job-methods.js';
import { openJobs, type OpenJobs } from './jobs.js';
import { openDelegations, type OpenDelegations } from './delegations.js';
import { registerDelegationMethods } from '../../surfaces/rpc/delegation-methods.js';
import { withDelegation } from '../../runtime/tools/delegate.js';
import { startRpcServer, type RpcServer } from '../../surfaces/rpc/server.js';
import { dashboardAssets } from '../../surfaces/dashboard/assets.js';
import { describeGateway } from './describe.js';
import { fileLoginStore } from '../login-file.js';
import { openOidc } from './oidc-setup.js';
import type { DaemonContext, DaemonService } from '../daemon.js';
import { DEFAULT_PORT } from '../config-listener.js';
import { gatewayRoots, launchLookups } from '../launch-files.js';
import { DEMO_MODEL_NAME } from './providers.js';
import { startRuntime, type Runtime } from './runtime.js';
import { DaemonError, oneLine } from '../errors.js';
import { parseConfig } from '../config.js';
import { storageRetryMs } from '../../domain/session/storage-wait.js';
import { listenError } from '../listen-errors.js';
import { portPlan, readChosenPort, rememberChosenPort, rememberedPortTaken } from '../chosen-port.js';
import { faultsFromEnv, type Faults } from '../faults.js';
import { Housekeeping } from '../housekeeping.js';
import { garbageCollector, memoryReader, type MemoryRoots } from '../memory.js';
import { hooksInWorker, isolateTools, WorkerPool } from '../../runtime/isolation/worker-host.js';
import { openGatewayStores, type GatewayStores, type OpenCluster } from './stores.js';
import { ClusterMember } from '../../domain/cluster/member.js';
import type { ClusterStore } from '../../domain/ports/cluster-store.js';
import { ControlRelay } from '../../domain/cluster/relay.js';
import type { TypedEmitter } from '../../domain/events/typed-emitter.js';
import type { MessagingEvents } from '../../domain/messaging/events.js';
import type { MessagingGateway } from '../../domain/messaging/gateway.js';
import { openMetrics } from './metrics-setup.js';
import { McpPool } from '../../runtime/mcp/pool.js';
import { apiServerGrants } from './api-server-setup.js';
import { ApiKeys } from '../../surfaces/openai/keys.js';
import { OpenAiEndpoint } from '../../surfaces/openai/endpoint.js';
import type { GatewayMetrics } from './metrics.js';
import { budgetGuardOf } from './budgets.js';
import { budgetLimits } from '../config-budgets.js';

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
 * open store, the runtime, the agent cache, and a hook through which they tell housekeeping which
 * routing entries have live work (a chat lane running a turn).
 */
export interface StoreHolder {
  /** The messaging stores on the open database, whichever backend; null while it is closed. */
  current: MessagingStores | null;
  /** The access store (shares, the audit trail) on the same database; null while it is closed. */
  access?: AccessStore | null;
  /** The runtime both engines run on (runtime.ts), built once; null while it is stopped. */
  runtime?: Runtime | null;
  agents?: AgentCache | null;
  /** Where services with live work register the session keys running now (route pruning skips them). */
  liveKeys?: (() => Iterable<string>)[];
  /** The messaging gateway registers its prompt broker here (null when it stops), for operators' answers. */
  platformPrompts?: ((broker: PromptBroker | null) => void) | null;
  /** With cluster.enabled: this instance's member and cluster store (the chat bots' leases); else null. */
  cluster?: { member: ClusterMember; store: ClusterStore } | null;
  /** The running messaging gateway, when a chat platform is enabled (home channels, CTX-1). */
  messaging?: (() => MessagingGateway | null) | null;
  /** With metrics.enabled: where the messaging gateway hands its events (null when it stops). */
  messagingEvents?: ((events: TypedEmitter<MessagingEvents> | null) => void) | null;
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
  let stores: GatewayStores | null = null;
  let store: SessionStore | null = null;
  let localStore: LocalSessionStore | null = null;
  let runtime: Runtime | null = null;
  let rpc: RpcServer | null = null;
  let control: ControlServer | null = null;
  let sessions: LocalSessions | null = null;
  let epoch = 0;
  let faults: Faults | null = null;
  let ctxLogger: DaemonContext['logger'] | null = null;
  let housekeeping: Housekeeping | null = null;
  let workers: WorkerPool | null = null;
  let cluster: OpenCluster | null = null;
  let member: ClusterMember | null = null;
  let relay: ControlRelay | null = null;
  let metrics: GatewayMetrics | null = null;
  let mcp: McpPool | null = null;
  let jobs: OpenJobs | null = null;
  let delegations: OpenDelegations | null = null;
  let jobsStatusTimer: NodeJS.Timeout | null = null;
  let profileName = '';

  return {
    name: 'gateway',
    async start(ctx: DaemonContext) {
      const { config, layout, logger } = ctx;
      ctxLogger = logger;
      faults = faultsFromEnv(env, logger);
      const profile = config.default_profile;
      // Before anything opens: a key named but not set stops the start (api-server-setup.ts).
      const apiGrants = apiServerGrants(config, env);
      const startedAt = Date.now();
      profileName = profile;
      const profileDir = layout.profileDir(profile);
      fs.mkdirSync(profileDir, { recursive: true, mode: 0o700 });
      stores = await openGatewayStores({
        config,
        env,
        stateDb: layout.stateDb(profile),
        instanceId: ctx.instanceId,
        faults,
        logger,
      });
      store = stores.sessions;
      localStore = stores.local;
      if (options.storeHolder) {
        options.storeHolder.current = stores.messaging;
        options.storeHolder.access = stores.access;
      }
      logger.info({ store: stores.kind }, `sessions are stored on ${stores.kind}`);
      ctx.advertise({ store: stores.label });
      epoch = await localStore.openEpoch(ctx.instanceId);
      ctx.advertise({ epoch });
      // SCL-1: several instances on one database. The member is made once the sessions exist; until
      // then (and after it fails) this instance owns nothing and runs nothing.
      if (config.cluster.enabled && stores.openCluster) {
        cluster = stores.openCluster(
          { instance_id: ctx.instanceId, epoch },
          (id) => member?.token(id) ?? null,
        );
        // Issue 14: prompt answers and interrupts reach the instance running the turn.
        relay = new ControlRelay({
          store: cluster.relay,
          execute: (kind, principal, params) => sessions!.runRelayed(kind, principal, params),
          log: logger,
        });
      }

      runtime = await startRuntime({ config, env, profileDir, instanceId: ctx.instanceId });
      if (options.storeHolder) options.storeHolder.runtime = runtime;
      const { providers, demo, prompts, turnPermits } = runtime;
      const defaultModel = providers.defaultModel(providers.defaultProvider);
      const modelOf = (policy: LaunchPolicy, apiKey: string | undefined): ChatModel =>
        providers.model(policy, apiKey);
      const budgetGuard = budgetGuardOf(config, env, store);
      // A call a crash cut short counts its worst case for good (docs/cost.md, "Budgets").
      const recovered = await store.recoverBudgetReservations(new Date().toISOString());
      if (recovered > 0)
        logger.info({ reservations: recovered }, 'budget reservations settled at their worst case');
      const contextSettings = (policy: LaunchPolicy): CompressionSettings => ({
        window: providers.contextWindow(policy),
        threshold: config.compression.threshold,
        tailTokens: config.compression.tail_tokens,
      });

      // Every tool process gets this allow-list, never the daemon's environment (docs/tool-reach.md).
      const toolEnv = toolEnvironment(env, config.tools);
      workers = new WorkerPool({
        ...config.safe_mode,
        runDir: layout.runDir,
        idleMs: config.safe_mode.idle_s * 1000,
        // Safe mode is stricter: the allow-list and safe_mode.env only, not the tools: additions.
        env: toolEnvironment(env, { env_passthrough: config.safe_mode.env, env: {} }),
      });
      // MCP servers (issue 27): started lazily by the turns that need their tools.
      mcp = new McpPool({
        profileServers: () => config.mcp_servers,
        env: toolEnv,
        isolate: (sessionId, launch, serverEnv) => workers!.isolatedLaunch(sessionId, launch, serverEnv),
        log: (level, message) => logger[level]({}, message),
      });
      const mcpPool = mcp;
      const onError = (error: unknown, context: string): void =>
        logger.error({ err: error, context }, context);
      const cacheConfig = config.agent_cache;
      const readMemory = memoryReader(cacheConfig.memory_high_mb, options.memoryRoots);
      const agents = new AgentCache({
        source: store,
        // Also swept for pressure as it grows, not only on the housekeeping interval.
        readMemory,
        // What a pressure sweep evicted goes back to the system before the next reading.
        reclaim: garbageCollector(),
        limits: {
          maxSize: cacheConfig.max_size,
          idleTtlMs: cacheConfig.idle_ttl_s * 1000,
          maxEvictionsPerPass: cacheConfig.max_evictions_per_pass,
          protectRecent: cacheConfig.protect_recent,
        },
      });
      if (options.storeHolder) options.storeHolder.agents = agents;
      let gitFound = false;
      const checkpoints = new CheckpointStore(path.join(profileDir, 'checkpoints'), {
        maxFiles: config.checkpoints.max_files,
        maxBytes: config.checkpoints.max_bytes,
        maxPerSession: config.checkpoints.max_per_session,
      });
      // The agent's `jobs` toolset: its session's jobs, on the job service opened below.
      const agentJobsPort = agentJobs({
        profile,
        local: localStore,
        jobs: () => jobs?.service ?? null,
        onError,
      });
      sessions = new LocalSessions({
        budget: budgetGuard,
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
          ...(config.budgets?.session ? { sessionBudget: budgetLimits(config.budgets).session } : {}),
          providers,
          offerSkills: config.skills.offer_available,
          mcpServers: Object.entries(config.mcp_servers)
            .filter(([, server]) => server.enabled)
            .map(([name]) => name),
        },
        launchLookups: {
          ...launchLookups(layout.root, gatewayRoots(layout)),
          safeModeRefusal: () => {
            const support = workers!.probe();
            return support.ok ? null : support.reason;
          },
          checkpointsRefusal: () => {
            // Once git is found it stays; until then every checkpoints request looks again.
            if (gitFound) return null;
            const refusal = gitRefusal(env);
            gitFound = refusal === null;
            return refusal;
          },
        },
        accepting: () => ctx.lifecycle.accepting(),
        maxConcurrentTurns: config.limits.max_concurrent_turns,
        turnPermits,
        turnTimeoutMs: config.limits.turn_timeout_s * 1000,
        mcpValueLimits: {
          sessionBytes: config.limits.mcp_values_max_bytes,
          totalBytes: config.limits.mcp_values_total_max_bytes,
        },
        tracer: runtime.tracer,
        ...(cluster
          ? {
              ownership: {
                owns: (id: string) => member?.owns(id) ?? false,
                elsewhere: (id: string) => member?.elsewhere(id),
                acquire: (id: string) => member?.acquire(id) ?? Promise.resolve(false),
                sideEffectsAllowed: (id: string) => member?.sideEffectsAllowed(id) ?? false,
              },
            }
          : {}),
        ...(relay ? { relay } : {}),
        recovery: {
          runningTool: config.recovery.running_tool,
          maxResumes: config.recovery.max_resumes,
          freshnessS: config.recovery.auto_continue_freshness_s,
        },
        replayCapacity: config.events.replay_max_events,
        replayMaxBytes: config.events.replay_max_bytes,
        ...(stores.cluster
          ? { cluster: { store: stores.cluster.events, signals: stores.cluster.signals } }
          : {}),
        agents,
        shares: stores.access,
        memberLimits: memberLimits(config.auth),
        chatMembers: chatMembersOf(config.platforms),
        onError,
        fault: (point) => faults?.hit(point),
        compression: { model: modelOf, settings: contextSettings },
        // session.context counts the built-in tools' schemas; an MCP server's, once started, are not.
        requestShape: {
          tools: (policy) => toolRegistry.resolve(policy.toolsets),
          platforms: () => ({
            connected: options.storeHolder?.messaging?.()?.connectedPlatforms() ?? [],
            homes: homeChannelsOf(config),
          }),
        },
        checkpoints,
        turnRunner: (service) =>
          makeTurnJobRunner({
            sessions: store!,
            prompts,
            tools: async (names, policy, logicalId) => {
              const environed = withAgentJobs(
                withToolEnvironment(toolRegistry.resolve(names), toolEnv),
                agentJobsPort,
              );
              const resolved = delegations ? withDelegation(environed, delegations.port) : environed;
              // Checked in the daemon, before a safe-mode call reaches its worker.
              const builtin = guardGatewayFiles(
                policy?.safe_mode ? isolateTools(resolved, workers!) : resolved,
                gatewayRoots(layout),
              );
              if (!policy || !logicalId || !McpPool.any(policy.mcp_servers)) return builtin;
              const scope = { sessionId: logicalId, cwd: policy.cwd, safe: policy.safe_mode };
              // The own servers' env and header values come from memory only (mcp-values.ts).
              const servers = service.mcpServersOf(logicalId, policy.mcp_servers!);
              return [...builtin, ...(await mcpPool.tools(servers, scope))];
            },
            model: modelOf,
            budget: { guard: budgetGuard, price: (policy) => providers.price(policy) },
            contextSettings,
            compress: (id, reason, signal, model) => service.compressInSlot(id, reason, signal, model),
            runningTool: config.recovery.running_tool,
            platforms: () => ({
              connected: options.storeHolder?.messaging?.()?.connectedPlatforms() ?? [],
              homes: homeChannelsOf(config),
            }),
            receipt: (id) => service.receiptForTurn(id),
            apiKey: (id) => service.apiKeyOf(id),
            publish: (id, event) => {
              faults?.observe(event.type);
              service.publish(id, event);
            },
            agentStarted: (id) => service.agentStarted(id),
            fault: (point) => faults?.hit(point),
            agents,
            lifecycle: (policy, scope) =>
              openTurnLifecycle(
                {
                  checkpoints,
                  homeHooks: config.hooks,
                  env: toolEnv,
                  // A safe-mode session's hooks run in its worker, like its tools (issue 25).
                  ...(policy.safe_mode ? { runHook: hooksInWorker(workers!, scope.sessionId) } : {}),
                },
                { checkpoints: policy.checkpoints, acceptHooks: policy.accept_hooks },
                scope,
              ),
          }),
      });
      const platformPrompts = sessions.platformPrompts;
      if (options.storeHolder)
        options.storeHolder.platformPrompts = (broker) => platformPrompts.attach(broker);
      // A replaced or rewritten transcript (compression, reset, rewind) drops the cached copy.
      sessions.events.on('transcript:replaced', (e) => agents.invalidate(e.logical_id));
      // A session taken over (SCL-1) may have run turns on another instance since it was cached here.
      sessions.events.on('session:taken', (e) => agents.invalidate(e.logical_id));
      // A deleted session's agent has nothing left to run.
      sessions.events.on('session:deleted', (e) => agents.invalidate(e.logical_id));
      // A full disk: each waiting session tells its viewers once, and again when its write went through.
      const local = sessions;
      local.events.on('storage:waiting', (e) => {
        if (e.retry_in_ms !== storageRetryMs(0)) return;
        logger.warn(
          e,
          `storage_unavailable: session ${e.logical_id} waits for the store (${e.error}) and retries`,
        );
        local.publish(e.logical_id, {
          type: 'session.storage_waiting',
          operation: e.operation,
          error: e.error,
        });
      });
      local.events.on('storage:back', (e) => {
        logger.info(e, `the store is writable again: session ${e.logical_id} goes on`);
        local.publish(e.logical_id, { type: 'session.storage_back', operation: e.operation });
      });

      metrics = await openMetrics(config, env, {
        local: sessions,
        runtime,
        agents,
        stores,
        connections: () => rpc?.connections.size ?? 0,
        member: () => member,
        platforms: Object.entries(config.platforms ?? {})
          .filter(([, section]) => section?.enabled === true)
          .map(([name]) => name),
      });
      if (options.storeHolder && metrics) {
        const open = metrics;
        options.storeHolder.messagingEvents = (events) => open.watchMessaging(events);
      }

      const dispatcher = new Dispatcher<RpcContext>(logger);
      registerBuiltinMethods(dispatcher, {
        authority: () => ({ instance_id: ctx.instanceId, epoch }),
        creationContract: () => ({
          ...creationContract(),
          defaults: {
            model: defaultModel,
            provider: providers.defaultProvider,
            toolsets: [...DEFAULT_TOOLSETS],
          },
          providers: providers.describe(),
          toolsets: toolRegistry.list().map((t) => t.name),
        }),
        storage: () => stores!.describe(),
        agentCache: () => agents.stats(),
        gateway: () =>
          describeGateway(ctx, {
            name: defaultModel,
            demo: demo !== null || defaultModel === DEMO_MODEL_NAME,
            provider: providers.defaultProvider,
            turns: turnPermits,
          }),
      });
      registerSessionMethods(dispatcher, sessions);
      // Scheduled jobs (docs/scheduling.md): their runner starts once recovery is done, below.
      jobs = openJobs({
        env,
        profile,
        store: stores.jobs,
        local: localStore,
        sessions,
        cluster: cluster ? { store: cluster.store, leaseS: config.cluster.lease_s } : null,
        fault: (point) => faults?.hit(point),
        onError,
        home: {
          ledger: stores.messaging.ledger,
          channels: homeChannelsOf(config),
          messaging: () => options.storeHolder?.messaging?.() ?? null,
        },
      });
      registerJobMethods(dispatcher, jobs.service);
      // Background delegations (docs/scheduling.md): their runner starts once recovery is done, below.
      delegations = openDelegations({
        profile,
        store: stores.delegations,
        local: localStore,
        sessions,
        limits: {
          maxDepth: config.delegations.max_depth,
          maxPerSession: config.delegations.max_per_session,
        },
        profileMcp: Object.entries(config.mcp_servers)
          .filter(([, server]) => server.enabled)
          .map(([name]) => name),
        cluster: cluster ? { store: cluster.store, leaseS: config.cluster.lease_s } : null,
        fault: (point) => faults?.hit(point),
        onError,
      });
      delegations.runner.events.on('delegation:started', (e) =>
        logger.info(e, `delegation ${e.delegation_id} started`),
      );
      delegations.runner.events.on('delegation:reported', (e) =>
        logger.info(e, `delegation ${e.delegation_id} reported (${e.outcome})`),
      );
      delegations.runner.events.on('delegation:stopped', (e) =>
        logger.info(e, `delegation ${e.delegation_id} stopped: ${e.detail}`),
      );
      registerDelegationMethods(dispatcher, delegations.service);
      registerAccessMethods(dispatcher, sessions, stores.access);
      dispatcher.setHooks(
        accessHooks(sessions, stores.access, { messageText: config.auth.audit.message_text }),
      );
      registerApprovalMethods(dispatcher, { local: runtime.prompts, platform: runtime.chatPrompts });
      const tickets = new TicketBook();
      const oidcSignIn = await openOidc(config, env);
      let passwordHash: string | null = config.dashboard.password_hash ?? null;
      // Tools may not drive the gateway: their connections are refused (docs/tool-reach.md).
      const spawnedPeer = spawnedPeerCheck({
        daemonPid: process.pid,
        toolSessions: toolSessionIds,
        isolatedProcesses: () => workers?.cgroupMembers() ?? [],
      });
      const listen = (port: number): Promise<RpcServer> =>
        startRpcServer({
          host: config.listener.host,
          port,
          dispatcher,
          tickets,
          profile,
          dashboard: { passwordHash },
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
            dashboard_login: passwordHash !== null,
            // The page offers "Sign in with your identity provider" when auth.oidc is configured.
            dashboard_oidc: oidcSignIn !== null,
            // Open connections and those refused past listener.max_connections since the start.
            connections: rpc?.connectionStats(),
          }),
          staticFiles: dashboardAssets().handler,
          metrics,
          openai:
            apiGrants === null
              ? null
              : new OpenAiEndpoint({
                  sessions: sessions!,
                  keys: new ApiKeys(apiGrants, profile),
                  approvalWaitMs: (config.api_server?.approval_wait_s ?? 0) * 1000,
                  startedAt,
                  logger,
                }),
          loginStore: fileLoginStore(path.join(profileDir, 'dashboard-logins.json'), (err) =>
            logger.warn({ err }, 'could not save the dashboard logins; they end with this run'),
          ),
          tls: config.listener.tls ? readTls(config.listener.tls, ctx.configFile) : null,
          oidc: oidcSignIn,
          onSignIn: (event) =>
            stores!.access.appendAudit({
              at: new Date().toISOString(),
              principal: event.subject,
              path: event.path,
              action: event.action,
              session_id: null,
              outcome: event.outcome,
              detail: null,
            }),
          spawnedPeer,
          maxConnections: config.listener.max_connections,
          logger,
        });
      const requested = config.listener.port;
      const plan = portPlan(requested, requested === undefined ? readChosenPort(layout.root) : null);
      try {
        rpc = await listen(plan.port).catch((error: NodeJS.ErrnoException) => {
          // Only the unasked-for default gives way; a port the owner chose is insisted on, and so is
          // the one chosen when the default was taken (the dashboard URL must not move again).
          if (!plan.mayGiveWay || error.code !== 'EADDRINUSE') throw error;
          logger.warn({ port: DEFAULT_PORT }, 'the default port is taken; listening on a free port instead');
          return listen(0);
        });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (plan.remembered !== null && code === 'EADDRINUSE')
          throw rememberedPortTaken(plan.remembered, layout.root, ctx.configFile);
        if (typeof code === 'string') throw listenError(error as NodeJS.ErrnoException, plan.port, ctx);
        throw error;
      }
      const chosen = Number(new URL(rpc.url).port);
      if (plan.mayGiveWay && chosen !== plan.port) {
        try {
          rememberChosenPort(layout.root, chosen);
        } catch (err) {
          logger.warn({ err }, 'could not remember the chosen port; the next start may choose another');
        }
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
      if (cluster) await cluster.store.setUrl(rpc.url);
      control = await startControlServer({
        socketPath: layout.controlSocket,
        homeRoot: layout.root,
        tickets,
        grant: { subject: 'native:owner', profile },
        sessionExists: async (id) => (await localStore?.getLocalSession(id))?.profile === profile,
        spawnedPeer,
        identify: () => ({
          state: ctx.lifecycle.state,
          url: rpc?.url ?? null,
          instance_id: ctx.instanceId,
          epoch,
          profiles: config.profiles,
        }),
        // `gatehouse passwd`: the new hash from the file, at once; every dashboard login ends.
        reloadPassword: async () => {
          const text = await fs.promises.readFile(ctx.configFile, 'utf8');
          passwordHash = parseConfig(text, ctx.configFile).config.dashboard.password_hash ?? null;
          const ended = rpc!.setPassword(passwordHash);
          return { logins_ended: ended.logins, connections_closed: ended.connections };
        },
        logger,
      });
      const liveKeys = options.storeHolder?.liveKeys ?? [];
      const openStore = store;
      const localSessions = sessions;
      housekeeping = new Housekeeping({
        intervalMs: config.housekeeping.interval_s * 1000,
        agents,
        readMemory,
        releaseIdle: () => localSessions.releaseIdle(),
        ...(stores.cluster ? { pruneEvents: () => stores!.cluster!.events.prune() } : {}),
        maxAgeDays: config.sessions.max_age_days,
        // The store itself never prunes a local session's route; running lanes are named here.
        prune: (maxAgeDays) =>
          openStore.pruneOldEntries({
            maxAgeDays,
            liveSessionKeys: new Set(liveKeys.flatMap((running) => [...running()])),
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
      if (cluster) {
        // In a cluster a cold start recovers only sessions no live instance holds (SCL-1): each is
        // taken under its lease and recovered alone, exactly as recover() would.
        const scheduler = localSessions.scheduler;
        const open = cluster;
        member = new ClusterMember({
          store: open.store,
          leaseS: config.cluster.lease_s,
          name: config.cluster.instance_name ?? null,
          sessions: {
            recoverSession: (id) => localSessions.recoverSession(id),
            kick: (id) => scheduler.kick(id),
            interruptForLease: (id) => scheduler.interruptForLease(id),
            busy: (id) => scheduler.busy(id),
            holdsKey: (id) => localSessions.apiKeyOf(id) !== undefined,
            keyedSessions: () => localSessions.keyedSessions(),
          },
          log: logger,
          storeFailed: () => open.failed(),
          fatal: (reason) => ctx.fail(`cluster: ${reason}`),
          onView: (view) => ctx.advertise({ cluster: view }),
        });
        if (options.storeHolder) options.storeHolder.cluster = { member, store: open.store };
        const clustered = member;
        sessions.events.on('queue:idle', (e) => void clustered.idle(e.logical_id));
        const taken = await member.start();
        relay?.start();
        logger.info({ epoch, cluster: true, ...taken }, 'recovery done');
      } else {
        const recovery = await sessions.recover();
        logger.info({ ...recovery }, 'recovery done');
        for (const id of recovery.paused)
          logger.error({ session_id: id }, 'session paused: its receipt did not validate');
      }
      const running = jobs;
      running.runner.events.on('job:fired', (e) => logger.info(e, `job ${e.job_id} fired`));
      running.runner.events.on('job:paused', (e) => logger.warn(e, `job ${e.job_id} paused: ${e.reason}`));
      running.runner.events.on('job:missed', (e) => logger.info(e, `job ${e.job_id} missed runs`));
      // gatehouse status reads each job's next and last run from gateway.json, rewritten when they change.
      let advertised = '';
      const advertiseJobs = () =>
        void running
          .status()
          .then((list) => {
            const text = JSON.stringify(list);
            if (text === advertised) return;
            advertised = text;
            ctx.advertise({ jobs: list });
          })
          .catch((error: unknown) => onError(error, 'scheduled jobs status'));
      for (const name of ['job:fired', 'job:settled', 'job:paused'] as const)
        running.runner.events.on(name, advertiseJobs);
      jobsStatusTimer = setInterval(advertiseJobs, 5000);
      advertiseJobs();
      running.runner.start();
      delegations.runner.start();
    },
    async drain(deadline: number) {
      housekeeping?.stop();
      if (jobsStatusTimer) clearInterval(jobsStatusTimer);
      // Claiming stops now, before anything here waits: a queued turn whose session's running turn
      // ends while the jobs are being stopped must not start on a draining instance (REC-6, SCL-1).
      member?.beginDrain();
      const sessionsDrained = sessions?.drain(deadline) ?? Promise.resolve([]);
      await jobs?.runner.stop();
      await delegations?.runner.stop();
      // In a cluster another instance runs the jobs from now on, not at the lease's expiry.
      if (cluster) await cluster.store.release('jobs', profileName).catch(() => false);
      if (cluster) await cluster.store.release('delegations', profileName).catch(() => false);
      const left = await sessionsDrained;
      if (member && sessions) {
        // Graceful handover (SCL-1): every lease but those of turns still running is released at
        // once, and the other instances are told to take the sessions over now.
        const running = sessions.scheduler.active().filter((id) => sessions!.scheduler.running(id) !== null);
        const released = await member
          .handOver(running)
          .catch((error: unknown) => (ctxLogger?.warn({ err: error }, 'lease handover failed'), []));
        ctxLogger?.info({ released: released.length, kept: running.length }, 'session leases handed over');
      }
      // Turns still running stay `running` in the store: the next start marks them unknown (REC-2).
      if (left.length > 0) ctxLogger?.warn({ admissions: left }, 'drain deadline passed with turns running');
    },
    async stop() {
      housekeeping?.stop();
      if (jobsStatusTimer) clearInterval(jobsStatusTimer);
      jobsStatusTimer = null;
      await jobs?.runner.stop();
      jobs = null;
      await delegations?.runner.stop();
      delegations = null;
      housekeeping = null;
      sessions?.clusterEvents?.stop();
      relay?.stop();
      relay = null;
      await member?.stop();
      member = null;
      if (options.storeHolder) options.storeHolder.cluster = null;
      await cluster?.close();
      cluster = null;
      // Before the workers: an isolated server's room is removed once its process is gone.
      await mcp?.close();
      mcp = null;
      workers?.close();
      workers = null;
      await control?.close().catch(() => undefined);
      await rpc?.close().catch(() => undefined);
      metrics?.close();
      metrics = null;
      if (options.storeHolder) options.storeHolder.messagingEvents = null;
      if (options.storeHolder) options.storeHolder.runtime = null;
      await runtime?.close();
      if (localStore && epoch > 0) await localStore.markCleanShutdown(epoch);
      if (options.storeHolder) {
        options.storeHolder.current = null;
        options.storeHolder.access = null;
      }
      await stores?.close().catch(() => undefined);
      control = rpc = null;
      runtime = null;
      stores = null;
      store = null;
      localStore = null;
    },
  };
}
