/**
 * The messaging gateway as a daemon service. It runs only when the config enables a platform (a
 * section under `platforms:`), and builds one adapter per enabled section through the platform
 * registry (Telegram built in; a plugin passes a registry with its own platforms). An unknown
 * section name is a config error that names the known platforms. defaultServices() adds it after
 * the gateway service, whose open store it shares (so it starts after the store is open and stops
 * before the store closes). It drains like REC-6 asks: stop receiving, let turns finish until the
 * deadline, mark the rest resume_pending, then write the clean-shutdown marker.
 */
import { join } from 'node:path';
import { defaultProvider } from '../../daemon/config-providers.js';
import { modelClientLimits, type GatehouseConfig, type PlatformSection } from '../../daemon/config.js';
import type { DaemonContext, DaemonService } from '../../daemon/daemon.js';
import { DaemonError, oneLine } from '../../daemon/errors.js';
import { faultsFromEnv } from '../../daemon/faults.js';
import type { AdapterStatus, PlatformAdapter } from '../../domain/messaging/adapter.js';
import { PromptBroker } from '../../runtime/approvals/broker.js';
import { ModelClient, type ChatModel } from '../../runtime/model/client.js';
import { inProcessDemoModel } from '../../runtime/demo/model.js';
import { defaultContextWindow } from '../../runtime/context/windows.js';
import { resolveToolsets } from '../../runtime/tools/registry.js';
import type { MessagingStores } from '../../storage/messaging-stores.js';
import type { PlatformCursors } from '../../storage/platform-cursors.js';
import { openGatewayStores, type GatewayStores } from '../../daemon/services/stores.js';
import type { AgentCache } from '../../domain/agents/agent-cache.js';
import { MessagingGateway, type PlatformOptions } from './gateway.js';
import { clusteredBots } from './cluster-bots.js';
import type { BotLeases } from '../../domain/cluster/bots.js';
import type { ClusterMember } from '../../domain/cluster/member.js';
import type { ClusterStore } from '../../storage/cluster-store.js';
import { builtinPlatforms, type PlatformConfig, type PlatformRegistry } from './registry.js';

export interface MessagingServiceOptions {
  /** The model; default: the configured one, else the in-process demo model. */
  model?: ChatModel;
  env?: NodeJS.ProcessEnv;
  /**
   * The stores another service already opened (the daemon's gateway service), on whichever backend
   * the config selects. Absent: this service opens the config's store itself and closes it on stop.
   */
  stores?: () => MessagingStores | null;
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
}

export interface MessagingService extends DaemonService {
  /** Each adapter's state, for `gatehouse status`. Empty when no platform is enabled. */
  adapterStatuses(): AdapterStatus[];
  /** The running gateway, when a platform is enabled (tests and the daemon wiring use it). */
  gateway(): MessagingGateway | null;
}

export function messagingService(options: MessagingServiceOptions = {}): MessagingService {
  let gateway: MessagingGateway | null = null;
  let owned: GatewayStores | null = null;
  let bots: BotLeases | null = null;
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
        profileDir: ctx.layout.profileDir(profile),
        cursors,
      });
      stores = options.stores?.() ?? null;
      if (stores === null) {
        if (options.stores !== undefined) {
          throw new DaemonError('service_failed', 'messaging gateway: the session store is not open');
        }
        owned = await openGatewayStores({
          config: ctx.config,
          env,
          stateDb: ctx.layout.stateDb(profile),
          instanceId: ctx.instanceId,
          faults: null,
          logger: ctx.logger,
        });
        stores = owned.messaging;
      }
      const publish = () => ctx.advertise({ adapters: standingBy(gateway?.adapterStatuses() ?? [], bots) });
      const faults = faultsFromEnv(env, ctx.logger);
      const prompts = new PromptBroker({ approvalTimeoutMs: ctx.config.approvals.timeout_s * 1000 });
      options.platformPrompts?.(prompts);
      gateway = new MessagingGateway({
        store: stores.sessions,
        ledger: stores.ledger,
        model: options.model ?? configuredModel(ctx, env),
        tools: resolveToolsets(['terminal', 'clarify']),
        prompts,
        cwd: ctx.layout.profileDir(profile),
        yolo: ctx.config.approvals.mode === 'off',
        turnTimeoutMs: ctx.config.limits.turn_timeout_s * 1000,
        freshnessSeconds: ctx.config.recovery.auto_continue_freshness_s,
        maxResumes: ctx.config.recovery.max_resumes,
        runningTool: ctx.config.recovery.running_tool,
        ...(faults ? { observe: (type: string) => faults.observe(type) } : {}),
        keyOptions: {
          groupSessionsPerUser: ctx.config.sessions.group_sessions_per_user,
          threadSessionsPerUser: ctx.config.sessions.thread_sessions_per_user,
        },
        platformOptions: Object.fromEntries(sections.map(([name, section]) => [name, optionsOf(section)])),
        ...(options.agents?.() ? { agents: options.agents()! } : {}),
        compression: {
          window: platformWindow(ctx.config),
          threshold: ctx.config.compression.threshold,
          tailTokens: ctx.config.compression.tail_tokens,
        },
      });
      const running = gateway;
      options.liveKeys?.push(() => running.runningSessionKeys());
      // Every adapter's state change, whatever the platform, rewrites gateway.json.
      gateway.events.on('adapter:status', publish);
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
      await gateway?.stop({ timeoutMs: Math.max(0, deadline - Date.now()) });
      // Handover (SCL-1): once nothing runs here any more, the bots go to another instance now.
      await bots?.release();
    },
    async stop() {
      bots?.stop();
      bots = null;
      options.platformPrompts?.(null);
      // Start-up rollback reaches here without a drain: stop without waiting for turns.
      if (gateway !== null && gateway.lifecycleState !== 'stopped') await gateway.stop({ timeoutMs: 0 });
      await owned?.close();
      gateway = null;
      owned = null;
    },
    adapterStatuses: () => gateway?.adapterStatuses() ?? [],
    gateway: () => gateway,
  };
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
  { configFile, profileDir, cursors }: { configFile: string; profileDir: string; cursors: PlatformCursors },
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
      const attachmentsDir = join(profileDir, 'attachments', name);
      adapters.push(
        await registry.create<PlatformConfig>(name, { name, section, env, attachmentsDir, cursors }),
      );
    } catch (error) {
      if (error instanceof DaemonError) throw error;
      throw new DaemonError('service_failed', `${name}: ${oneLine(error)}`, { cause: error });
    }
  }
  return adapters;
}

/** A section's own session isolation and redaction; absent isolation keys follow `sessions`. */
function optionsOf(section: PlatformSection): PlatformOptions {
  return {
    redactPii: section.redact_pii,
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

/** Chat platforms talk to the default provider's default model (config-providers.ts). */
function configuredModel(ctx: DaemonContext, env: NodeJS.ProcessEnv): ChatModel {
  const provider = defaultProvider(ctx.config);
  if (provider === null) return inProcessDemoModel({ contextWindow: ctx.config.demo_model.context_window });
  const apiKey =
    provider.api_key ?? (provider.api_key_env === undefined ? undefined : env[provider.api_key_env]);
  return new ModelClient({
    baseUrl: provider.base_url,
    model: provider.models[0]!.name,
    apiKey,
    reasoningFormat: provider.reasoning_format,
    ...modelClientLimits(ctx.config.model),
  });
}

function platformWindow(config: GatehouseConfig): number {
  const provider = defaultProvider(config);
  if (provider === null) return config.demo_model.context_window;
  const model = provider.models[0]!;
  return model.context_window ?? provider.context_window ?? defaultContextWindow(model.name);
}
