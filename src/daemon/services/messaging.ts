/**
 * The messaging gateway as a daemon service: the wiring of the chat-platform engine
 * (domain/messaging) to the daemon. It runs only when the config enables a platform (a section
 * under `platforms:`), and builds one adapter per enabled section through the platform registry
 * (Telegram built in; a plugin passes a registry with its own platforms). An unknown section name
 * is a config error that names the known platforms. defaultServices() adds it after the gateway
 * service, whose open store and runtime (runtime.ts: model, prompt broker, demo model) it shares,
 * so it starts after they are up and stops before they close. It drains like REC-6 asks: stop
 * receiving, let turns finish until the deadline, mark the rest resume_pending, then write the
 * clean-shutdown marker.
 */
import { budgetGuardOf } from './budgets.js';
import { memberLimits } from '../config-auth.js';
import { checkMemberModel, type MemberLimits } from '../../domain/auth/member-limits.js';
import { toolEnvironment } from '../../runtime/tools/env.js';
import { guardGatewayFiles, withToolEnvironment } from '../../runtime/tools/reach.js';
import { gatewayRoots } from '../launch-files.js';
import { chatWorkspace, platformAttachments } from '../workspaces.js';
import { homeChannelsOf, type PlatformSection } from '../config-platforms.js';
import type { GatehouseConfig } from '../config-schema.js';
import type { DaemonContext, DaemonService } from '../daemon.js';
import { DaemonError, oneLine } from '../errors.js';
import { faultsFromEnv } from '../faults.js';
import type { AdapterStatus, PlatformAdapter } from '../../domain/messaging/adapter.js';
import type { PromptBroker } from '../../runtime/approvals/broker.js';
import type { ChatModel } from '../../runtime/model/client.js';
import { resolveToolsets } from '../../runtime/tools/registry.js';
import type { MessagingStores } from '../../domain/ports/messaging-stores.js';
import type { AccessStore, AuditEntry } from '../../domain/ports/access-store.js';
import type { PlatformCursors } from '../../domain/ports/platform-cursors.js';
import { openGatewayStores, type GatewayStores } from './stores.js';
import { startRuntime, type Runtime } from './runtime.js';
import type { AgentCache } from '../../domain/agents/agent-cache.js';
import { MessagingGateway, type PlatformOptions } from '../../domain/messaging/gateway.js';
import { clusteredBots } from '../../domain/messaging/cluster-bots.js';
import type { BotLeases } from '../../domain/cluster/bots.js';
import type { ClusterMember } from '../../domain/cluster/member.js';
import type { ClusterStore } from '../../domain/ports/cluster-store.js';
import {
  builtinPlatforms,
  PlatformSetupError,
  type PlatformConfig,
  type PlatformRegistry,
} from '../../surfaces/platforms/registry.js';

export interface MessagingServiceOptions {
  /** The model; default: the runtime's (the default provider's default model, else the demo model). */
  model?: ChatModel;
  env?: NodeJS.ProcessEnv;
  /**
   * The stores another service already opened (the daemon's gateway service), on whichever backend
   * the config selects. Absent: this service opens the config's store itself and closes it on stop.
   */
  stores?: () => MessagingStores | null;
  /** The access store on the same database (the audit trail), when another service opened it. */
  access?: () => AccessStore | null;
  /**
   * The runtime the gateway service started (runtime.ts), shared with local sessions. Absent: this
   * service starts one itself and stops it on stop.
   */
  runtime?: () => Runtime | null;
  /** Where platforms are looked up by section name; default: builtinPlatforms(). */
  registry?: PlatformRegistry;
  /** The daemon's agent cache (shared with local sessions); absent: none kept between turns. */
  agents?: () => AgentCache | null;
  /** Where this service registers the session keys it has a turn running for (route pruning). */
  liveKeys?: (() => Iterable<string>)[];
  /**
   * Where this service registers its prompt broker (null on stop), so an operator on another
   * client (the dashboard) can answer a chat turn's approval or question.
   */
  platformPrompts?: (broker: PromptBroker | null) => void;
  /**
   * With cluster.enabled: the instance's cluster member and store. The gateway then runs only
   * while this instance holds its bots' leases (cluster-bots.ts); null or absent: it runs at once.
   */
  cluster?: () => { member: ClusterMember; store: ClusterStore } | null;
  /** Told the running gateway's lifecycle events (metrics), and null when it stops. */
  events?: (events: MessagingGateway['events'] | null) => void;
}

export interface MessagingService extends DaemonService {
  /** Each adapter's state, for `gatehouse status`. Empty when no platform is enabled. */
  adapterStatuses(): AdapterStatus[];
  /** The running gateway, when a platform is enabled (tests and the daemon wiring use it). */
  gateway(): MessagingGateway | null;
}

/** How often the cluster's bot holder looks for owed home-channel results (one indexed query). */
const OWED_SWEEP_MS = 1000;

export function messagingService(options: MessagingServiceOptions = {}): MessagingService {
  let gateway: MessagingGateway | null = null;
  let owned: GatewayStores | null = null;
  let ownedRuntime: Runtime | null = null;
  let bots: BotLeases | null = null;
  /** In a cluster with home channels: the holder of the bots sends results another instance's jobs owe. */
  let owedSweep: NodeJS.Timeout | null = null;
  const stopOwedSweep = (): void => {
    if (owedSweep !== null) clearInterval(owedSweep);
    owedSweep = null;
  };
  const env = options.env ?? process.env;

  return {
    name: 'messaging gateway',
    async start(ctx: DaemonContext) {
      const sections = enabledPlatforms(ctx.config);
      if (sections.length === 0) return;
      // The cursors live on the store, which opens after the adapters are built (a config error
      // must fail the start before anything is opened); adapters read them only once started.
      let stores: MessagingStores | null = null;
      const cursors: PlatformCursors = {
        readCursors: (platform) => stores!.cursors.readCursors(platform),
        saveCursor: (platform, channel, id) => stores!.cursors.saveCursor(platform, channel, id),
      };
      const profile = ctx.config.default_profile;
      const adapters = await buildAdapters(options.registry ?? builtinPlatforms(), sections, env, {
        configFile: ctx.configFile,
        // Beside the chats' workspaces, outside the home: the agent reads them with its tools.
        attachmentsDir: (platform) => platformAttachments(ctx.layout.root, platform),
        cursors,
      });
      stores = await sharedOrOwn(options.stores, 'the session store is not open', async () => {
        owned = await openGatewayStores({
          config: ctx.config,
          env,
          stateDb: ctx.layout.stateDb(profile),
          instanceId: ctx.instanceId,
          faults: null,
          logger: ctx.logger,
        });
        return owned.messaging;
      });
      const access = options.access?.() ?? owned?.access ?? null;
      const runtime = await sharedOrOwn(options.runtime, 'the runtime is not started', async () => {
        ownedRuntime = await startRuntime({
          config: ctx.config,
          env,
          profileDir: ctx.layout.profileDir(profile),
        });
        return ownedRuntime;
      });
      const publish = () => ctx.advertise({ adapters: standingBy(gateway?.adapterStatuses() ?? [], bots) });
      const faults = faultsFromEnv(env, ctx.logger);
      const prompts = runtime.chatPrompts;
      options.platformPrompts?.(prompts);
      gateway = new MessagingGateway({
        store: stores.sessions,
        ledger: stores.ledger,
        model: options.model ?? runtime.chat.model,
        // The tool environment and the guard on the gateway's files of local sessions (docs/tool-reach.md).
        tools: guardGatewayFiles(
          withToolEnvironment(
            resolveToolsets(['terminal', 'clarify']),
            toolEnvironment(env, ctx.config.tools),
          ),
          gatewayRoots(ctx.layout),
        ),
        prompts,
        // A folder per chat outside the home, never the profile folder beside state.db.
        cwd: (platform, chatId) => chatWorkspace(ctx.layout.root, platform, chatId),
        yolo: ctx.config.approvals.mode === 'off',
        memberRefusal: memberChatRefusal(
          memberLimits(ctx.config.auth),
          runtime.providers.defaultChoice(),
          options.model !== undefined,
        ),
        // Mapped users' actions (issue 30), on the store's audit trail as every other path's.
        ...(access === null ? {} : { audit: (entry: AuditEntry) => access.appendAudit(entry) }),
        turnTimeoutMs: ctx.config.limits.turn_timeout_s * 1000,
        freshnessSeconds: ctx.config.recovery.auto_continue_freshness_s,
        maxResumes: ctx.config.recovery.max_resumes,
        runningTool: ctx.config.recovery.running_tool,
        turnPermits: runtime.turnPermits,
        budget: {
          guard: budgetGuardOf(ctx.config, env, stores.sessions),
          price: runtime.providers.price(runtime.providers.defaultChoice()),
        },
        tracer: runtime.tracer,
        // An unreachable platform API must not hold up the daemon's readiness (local sessions).
        connectInBackground: true,
        ...(faults ? { observe: (type: string) => faults.observe(type) } : {}),
        keyOptions: {
          groupSessionsPerUser: ctx.config.sessions.group_sessions_per_user,
          threadSessionsPerUser: ctx.config.sessions.thread_sessions_per_user,
        },
        // CTX-1: each chat's context names where scheduled output goes.
        homeChannels: homeChannelsOf(ctx.config),
        platformOptions: Object.fromEntries(sections.map(([name, section]) => [name, optionsOf(section)])),
        ...(options.agents?.() ? { agents: options.agents()! } : {}),
        compression: {
          window: runtime.chat.window,
          threshold: ctx.config.compression.threshold,
          tailTokens: ctx.config.compression.tail_tokens,
        },
      });
      const running = gateway;
      options.liveKeys?.push(() => running.runningSessionKeys());
      // Every adapter's state change, whatever the platform, rewrites gateway.json.
      gateway.events.on('adapter:status', publish);
      // A full disk: each chat write that waits for the store is logged once, and again when it went through.
      gateway.events.on('storage:waiting', (e) => {
        if (e.attempt === 0)
          ctx.logger.warn(
            e,
            `storage_unavailable: chat ${e.session_key} waits for the store (${e.error}) and retries`,
          );
      });
      // What the chats' recovery decided at this start, as the local sessions' recovery is logged.
      gateway.events.on('recovery:done', (e) =>
        ctx.logger.info(
          {
            clean_shutdown: e.cleanShutdown,
            resumed: e.resumed,
            settled: e.settled,
            stale: e.stale,
            suspended: e.suspended,
            auto_continued: e.auto_continued,
            delivered: e.delivered,
            requeued: e.requeued,
          },
          'chat recovery done',
        ),
      );
      gateway.events.on('storage:back', (e) =>
        ctx.logger.info(e, `the store is writable again: chat ${e.session_key} goes on`),
      );
      options.events?.(gateway.events);
      for (const adapter of adapters) gateway.addAdapter(adapter);
      const cluster = options.cluster?.() ?? null;
      if (cluster !== null) {
        // SCL-1: receive only while this instance holds the bots' leases; stand by otherwise.
        let started = false;
        bots = clusteredBots({
          cluster,
          adapters,
          stores,
          gateway,
          log: ctx.logger,
          changed: publish,
          // Lost during the start itself: the start fails instead (below), as on one instance.
          fatal: (reason) => started && ctx.fail(reason),
        });
        await bots.start();
        if (bots.state === 'lost') {
          throw new DaemonError(
            'service_failed',
            `messaging gateway: ${bots.lostWhy ?? 'the bots were lost'}`,
          );
        }
        started = true;
        publish();
        if (Object.keys(ctx.config.home_channels).length > 0) {
          // A scheduled job's result is put on the ledger by the instance running the jobs, which
          // may not hold the bots: whichever does sends it (docs/scheduling.md, "Home channels").
          owedSweep = setInterval(() => {
            gateway?.sweepOwed().catch((error: unknown) => {
              ctx.logger.warn({ err: oneLine(error) }, 'home channel delivery sweep failed; retried');
            });
          }, OWED_SWEEP_MS);
          owedSweep.unref();
        }
        return;
      }
      try {
        await gateway.start();
      } catch (error) {
        throw new DaemonError('service_failed', `messaging gateway: ${oneLine(error)}`, { cause: error });
      }
      publish();
    },
    async drain(deadline: number) {
      stopOwedSweep();
      await gateway?.stop({ timeoutMs: Math.max(0, deadline - Date.now()) });
      // Handover (SCL-1): once nothing runs here any more, the bots go to another instance now.
      await bots?.release();
    },
    async stop() {
      stopOwedSweep();
      bots?.stop();
      bots = null;
      options.platformPrompts?.(null);
      options.events?.(null);
      // Start-up rollback reaches here without a drain: stop without waiting for turns.
      if (gateway !== null && gateway.lifecycleState !== 'stopped') await gateway.stop({ timeoutMs: 0 });
      await owned?.close();
      await ownedRuntime?.close();
      gateway = null;
      owned = null;
      ownedRuntime = null;
    },
    adapterStatuses: () => gateway?.adapterStatuses() ?? [],
    gateway: () => gateway,
  };
}

/**
 * What the gateway service shares (`shared`), or, with nothing shared (the service runs alone),
 * what `own` opens for this service. Promised but not there: the start fails.
 */
async function sharedOrOwn<T>(
  shared: (() => T | null) | undefined,
  missing: string,
  own: () => Promise<T>,
): Promise<T> {
  if (shared === undefined) return own();
  const value = shared();
  if (value === null) throw new DaemonError('service_failed', `messaging gateway: ${missing}`);
  return value;
}

/** In a cluster, while another instance holds the bots: each stopped adapter says so. */
function standingBy(statuses: AdapterStatus[], bots: BotLeases | null): AdapterStatus[] {
  if (bots === null || (bots.state !== 'standby' && bots.state !== 'taking')) return statuses;
  return statuses.map((s) =>
    s.state === 'stopped' && s.detail === null
      ? { ...s, detail: 'standing by: another instance of the cluster receives for this bot' }
      : s,
  );
}

/** Every enabled section under `platforms:`, by name, in the order of the file. */
function enabledPlatforms(config: GatehouseConfig): [string, PlatformSection][] {
  return Object.entries(config.platforms).flatMap(([name, section]) =>
    section === undefined || !section.enabled ? [] : [[name, section as PlatformSection]],
  );
}

/**
 * One adapter per section, each from the factory registered under its name, one after another in
 * the file's order. Checked before anything is opened: an unknown name is a config error naming the
 * known platforms.
 */
async function buildAdapters(
  registry: PlatformRegistry,
  sections: readonly [string, PlatformSection][],
  env: NodeJS.ProcessEnv,
  {
    configFile,
    attachmentsDir,
    cursors,
  }: { configFile: string; attachmentsDir: (platform: string) => string; cursors: PlatformCursors },
): Promise<PlatformAdapter[]> {
  for (const [name] of sections) {
    if (!registry.has(name)) {
      throw new DaemonError(
        'config_invalid',
        `${configFile}: platforms.${name}: there is no chat platform named "${name}" (known: ${registry.names().join(', ') || 'none'}); fix the name or remove the section`,
      );
    }
  }
  const adapters: PlatformAdapter[] = [];
  for (const [name, section] of sections) {
    try {
      adapters.push(
        await registry.create<PlatformConfig>(name, {
          name,
          section,
          env,
          attachmentsDir: attachmentsDir(name),
          cursors,
        }),
      );
    } catch (error) {
      if (error instanceof DaemonError) throw error;
      // A factory's own refusal already names its platform.
      const message = error instanceof PlatformSetupError ? error.message : `${name}: ${oneLine(error)}`;
      throw new DaemonError('service_failed', message, { cause: error });
    }
  }
  return adapters;
}

/** A section's own session isolation and redaction; absent isolation keys follow `sessions`. */
/**
 * Why a member mapped on a chat platform may not run chat turns (issue 30): every chat turn runs the
 * gateway's default provider and model, with no safe mode, so `auth.members` is checked against
 * those once, at start. Null: members' chat turns run. A model given in code (tests, plugins) is
 * not a provider choice and is not checked.
 */
function memberChatRefusal(
  limits: MemberLimits,
  choice: { provider: string | null; model: string },
  modelInCode: boolean,
): string | null {
  const why = (reason: string) =>
    `Your messages here are not answered: ${reason}. Use the dashboard, or ask the gateway operator.`;
  if (limits.safe_mode === 'forced')
    return why(
      "members' sessions run in safe mode (auth.members.safe_mode: forced), and chat conversations have none",
    );
  if (modelInCode) return null;
  try {
    checkMemberModel(limits, choice.provider, choice.model);
    return null;
  } catch (error) {
    return why(
      `chats run ${choice.provider ?? 'the model block'}/${choice.model}, and ${(error as Error).message}`,
    );
  }
}

function optionsOf(section: PlatformSection): PlatformOptions {
  return {
    redactPii: section.redact_pii,
    duringTurn: section.during_turn,
    ...(section.members === undefined ? {} : { members: new Map(Object.entries(section.members)) }),
    keyOptions: {
      ...(section.group_sessions_per_user === undefined
        ? {}
        : { groupSessionsPerUser: section.group_sessions_per_user }),
      ...(section.thread_sessions_per_user === undefined
        ? {}
        : { threadSessionsPerUser: section.thread_sessions_per_user }),
    },
  };
}
