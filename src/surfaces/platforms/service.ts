/**
 * The messaging gateway as a daemon service. It runs only when the config enables a platform
 * (`platforms.telegram`); defaultServices() adds it after the gateway service, whose open store it
 * shares (so it starts after the store is open and stops before the store closes). It drains like REC-6 asks: stop receiving, let turns finish until the deadline,
 * mark the rest resume_pending, then write the clean-shutdown marker.
 */
import type { DaemonContext, DaemonService } from '../../daemon/daemon.js';
import { DaemonError, oneLine } from '../../daemon/errors.js';
import type { AdapterStatus } from '../../domain/messaging/adapter.js';
import { PromptBroker } from '../../runtime/approvals/broker.js';
import { ModelClient, type ChatModel } from '../../runtime/model/client.js';
import { inProcessDemoModel } from '../../runtime/demo/model.js';
import { resolveToolsets } from '../../runtime/tools/registry.js';
import { SqliteDeliveryLedger } from '../../storage/sqlite/delivery-ledger.js';
import { SqliteSessionStore } from '../../storage/sqlite/session-store.js';
import { MessagingGateway } from './gateway.js';
import { TelegramAdapter } from './telegram/adapter.js';

export interface MessagingServiceOptions {
  /** The model; default: the configured one, else the in-process demo model. */
  model?: ChatModel;
  env?: NodeJS.ProcessEnv;
  /**
   * The store another service already opened (the daemon's gateway service). Absent: this service
   * opens the profile's state.db itself and closes it on stop.
   */
  store?: () => SqliteSessionStore | null;
}

export interface MessagingService extends DaemonService {
  /** Each adapter's state, for `gatehouse status`. Empty when no platform is enabled. */
  adapterStatuses(): AdapterStatus[];
  /** The running gateway, when a platform is enabled (tests and the daemon wiring use it). */
  gateway(): MessagingGateway | null;
}

export function messagingService(options: MessagingServiceOptions = {}): MessagingService {
  let gateway: MessagingGateway | null = null;
  let store: SqliteSessionStore | null = null;
  let ownsStore = false;
  const env = options.env ?? process.env;

  return {
    name: 'messaging gateway',
    async start(ctx: DaemonContext) {
      const telegram = ctx.config.platforms.telegram;
      if (telegram === undefined || !telegram.enabled) return;
      const token = env[telegram.token_env];
      if (token === undefined || token.trim() === '') {
        throw new DaemonError(
          'service_failed',
          `telegram: the environment variable ${telegram.token_env} (platforms.telegram.token_env) holding the bot token is not set`,
        );
      }
      const profile = ctx.config.default_profile;
      store = options.store?.() ?? null;
      if (store === null) {
        if (options.store !== undefined) {
          throw new DaemonError('service_failed', 'messaging gateway: the session store is not open');
        }
        store = SqliteSessionStore.open(ctx.layout.stateDb(profile));
        ownsStore = true;
      }
      const publish = () => ctx.advertise({ adapters: gateway?.adapterStatuses() ?? [] });
      gateway = new MessagingGateway({
        store,
        ledger: new SqliteDeliveryLedger(store.db),
        model: options.model ?? configuredModel(ctx, env),
        tools: resolveToolsets(['terminal', 'clarify']),
        prompts: new PromptBroker({ approvalTimeoutMs: ctx.config.approvals.timeout_s * 1000 }),
        cwd: ctx.layout.profileDir(profile),
        yolo: ctx.config.approvals.mode === 'off',
        redactPii: telegram.redact_pii,
        keyOptions: {
          groupSessionsPerUser:
            telegram.group_sessions_per_user ?? ctx.config.sessions.group_sessions_per_user,
          threadSessionsPerUser:
            telegram.thread_sessions_per_user ?? ctx.config.sessions.thread_sessions_per_user,
        },
      });
      // Every adapter's state change, whatever the platform, rewrites gateway.json.
      gateway.events.on('adapter:status', publish);
      gateway.addAdapter(
        new TelegramAdapter({
          token,
          apiRoot: telegram.api_root,
          ...(telegram.allowed_user_ids === undefined ? {} : { allowedUserIds: telegram.allowed_user_ids }),
        }),
      );
      try {
        await gateway.start();
      } catch (error) {
        throw new DaemonError('service_failed', `messaging gateway: ${oneLine(error)}`, { cause: error });
      }
      publish();
    },
    async drain(deadline: number) {
      await gateway?.stop({ timeoutMs: Math.max(0, deadline - Date.now()) });
    },
    async stop() {
      // Start-up rollback reaches here without a drain: stop without waiting for turns.
      if (gateway !== null && gateway.lifecycleState !== 'stopped') await gateway.stop({ timeoutMs: 0 });
      if (ownsStore) await store?.close();
      gateway = null;
      store = null;
      ownsStore = false;
    },
    adapterStatuses: () => gateway?.adapterStatuses() ?? [],
    gateway: () => gateway,
  };
}

function configuredModel(ctx: DaemonContext, env: NodeJS.ProcessEnv): ChatModel {
  const model = ctx.config.model;
  if (model === undefined) return inProcessDemoModel();
  const apiKey = model.api_key ?? (model.api_key_env === undefined ? undefined : env[model.api_key_env]);
  return new ModelClient({ baseUrl: model.base_url, model: model.model, apiKey });
}
