/**
 * The runtime both session engines run on, built once per daemon: the model providers (the
 * configured ones, or the built-in demo model on loopback when none is), the chat platforms' model,
 * the prompt brokers, and the limit on turns running at once. The gateway service starts it and hands it to the local sessions and,
 * through the StoreHolder, to the messaging service; neither engine builds a model client, a demo
 * model or a broker of its own. A messaging service run alone (its in-process tests) starts one
 * with the same function.
 */
import path from 'node:path';
import type { GatehouseConfig } from '../config-schema.js';
import { FileAlwaysAllowStore } from '../../runtime/approvals/always-store.js';
import { PromptBroker } from '../../runtime/approvals/broker.js';
import { startDemoModel, type DemoModelServer } from '../../runtime/demo/server.js';
import type { ChatModel } from '../../runtime/model/client.js';
import { Semaphore } from '../../domain/concurrency/semaphore.js';
import { NO_TRACER, type TurnTracer } from '../../runtime/tracing.js';
import { ProviderTable } from './providers.js';
import { gatehouseVersion } from './describe.js';
import { openTracing, TRACE_FLUSH_MS } from './tracing-setup.js';
import type { GatewayTracing } from './tracing.js';

export interface Runtime {
  readonly providers: ProviderTable;
  /** The built-in demo model, serving on loopback when no provider is configured; else null. */
  readonly demo: DemoModelServer | null;
  /** Local sessions' prompts: an `always` answer persists in the profile's always-allow.json. */
  readonly prompts: PromptBroker;
  /**
   * Chat platforms' prompts: a broker of their own, whose `always` answers are remembered in memory
   * only, so a local "always allow" never applies to every chat user (docs/decisions.md, "Dashboard:
   * chat-platform sessions are watched and their prompts answered, not typed into").
   */
  readonly chatPrompts: PromptBroker;
  /** What chat-platform turns run on: the default provider's default model, and its context window. */
  readonly chat: { readonly model: ChatModel; readonly window: number };
  /**
   * `limits.max_concurrent_turns`: the one limit on turns running at once, local and chat-platform
   * alike; each engine holds a permit for as long as a turn runs.
   */
  readonly turnPermits: Semaphore;
  /** Turn traces of both engines (`telemetry`, docs/observability.md); NO_TRACER when off. */
  readonly tracer: TurnTracer;
  /** The OpenTelemetry side when `telemetry.otlp_endpoint` is set; else null (never loaded). */
  readonly tracing: GatewayTracing | null;
  /** Stops the demo model and flushes the traces (a bounded wait; the brokers hold nothing to close). */
  close(): Promise<void>;
}

export async function startRuntime(options: {
  config: GatehouseConfig;
  env: NodeJS.ProcessEnv;
  /** The default profile's directory (always-allow.json). */
  profileDir: string;
  /** This daemon instance (traces name it: `service.instance.id`). */
  instanceId?: string;
}): Promise<Runtime> {
  const { config, env } = options;
  const approvalTimeoutMs = config.approvals.timeout_s * 1000;
  // First, so that an approvals file that cannot be read fails the start before anything runs.
  const prompts = new PromptBroker({
    alwaysAllow: new FileAlwaysAllowStore(path.join(options.profileDir, 'always-allow.json')),
    approvalTimeoutMs,
    mode: config.approvals.mode,
  });
  const demo = ProviderTable.needsDemo(config)
    ? await startDemoModel({
        host: '127.0.0.1',
        port: 0,
        record: false,
        contextWindow: config.demo_model.context_window,
      })
    : null;
  const providers = new ProviderTable(config, env, demo?.baseUrl ?? null);
  const tracing = await openTracing(config, env, {
    version: gatehouseVersion(),
    instanceId: options.instanceId ?? 'standalone',
  }).catch(async (error: unknown) => {
    await demo?.close().catch(() => undefined);
    throw error;
  });
  const chatChoice = providers.defaultChoice();
  return {
    providers,
    demo,
    prompts,
    chatPrompts: new PromptBroker({ approvalTimeoutMs, mode: config.approvals.mode }),
    turnPermits: new Semaphore(config.limits.max_concurrent_turns),
    tracer: tracing?.tracer ?? NO_TRACER,
    tracing,
    chat: { model: providers.model(chatChoice, undefined), window: providers.contextWindow(chatChoice) },
    close: async () => {
      await demo?.close().catch(() => undefined);
      await tracing?.close(TRACE_FLUSH_MS);
    },
  };
}
