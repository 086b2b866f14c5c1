/**
 * The daemon's providers at run time: each configured provider (the `model:` block, the `providers`
 * section) or the built-in demo model, the model client of each session's frozen choice, and each
 * model's context window (issue 11: per model, else per provider, else a known family's, else the
 * default). runtime.describe shows their names and models, never a URL or a key.
 */
import { performance } from 'node:perf_hooks';
import type { ProviderCatalogue } from '../../domain/local/launch-context.js';
import type { LaunchPolicy } from '../../domain/local/launch-policy.js';
import type { ChatModel } from '../../runtime/model/client.js';
import { ModelClient } from '../../runtime/model/client.js';
import { ModelError } from '../../runtime/model/errors.js';
import { callCost, priceOf, type ModelPrice } from '../../runtime/model/pricing.js';
import { defaultContextWindow } from '../../runtime/context/windows.js';
import {
  configuredProviders,
  DEMO_PROVIDER,
  describeKeySource,
  MODEL_BLOCK_PROVIDER,
  type ProviderSettings,
  type ReasoningFormat,
} from '../config-providers.js';
import { modelClientLimits, type GatehouseConfig } from '../config-schema.js';
import { TypedEmitter } from '../../domain/events/typed-emitter.js';
import type { TokenUsage } from '../../domain/vocabulary.js';

/** The provider label of a session that named its own `base_url` (no configured provider). */
export const CUSTOM_PROVIDER = 'custom';
/** The model label of a model no provider lists: labels stay bounded whatever a session names. */
export const OTHER_MODEL = 'other';

/**
 * One model call as it ended, for metrics: the provider and model as configured (bounded labels),
 * how long it took, and what it used. Never the request or its answer.
 */
export interface ModelCallEvent {
  provider: string;
  model: string;
  seconds: number;
  ok: boolean;
  /** Null when the call failed. */
  usage: TokenUsage | null;
}

export interface ProviderEvents extends Record<string, unknown> {
  'model:call': ModelCallEvent;
}

export const DEMO_MODEL_NAME = 'gatehouse-demo';

/** A key given with the session (`session.create`'s api_key) is the one a refusal points at. */
const SESSION_KEY_SOURCE = 'the api_key given when the session was created';

/** What picks a model: a session's frozen choice (its launch policy), or the defaults. */
export type ModelChoice = Pick<LaunchPolicy, 'model' | 'provider' | 'base_url'>;

/** A provider as runtime.describe shows it. */
export interface ProviderDescription {
  name: string;
  default: boolean;
  models: string[];
  /** Whether a session may name a model `models` does not list (the `model:` block, the demo). */
  any_model: boolean;
  demo: boolean;
}

interface Entry {
  settings: ProviderSettings;
  apiKey: string | undefined;
  /** Where apiKey came from, named in a refused key's message. */
  keySource: string;
  /** The demo model's own window, which it enforces. */
  demoWindow: number | null;
}

export class ProviderTable implements ProviderCatalogue {
  readonly defaultProvider: string;
  readonly names: readonly string[];
  private readonly entries = new Map<string, Entry>();
  private readonly clients = new Map<string, ModelClient>();
  /** Every model call of either engine ends here (metrics listen; nothing else needs to). */
  readonly events = new TypedEmitter<ProviderEvents>();
  private readonly observedClients = new WeakMap<ModelClient, Map<string, ChatModel>>();

  /** `demoBaseUrl`: where the built-in demo model listens, when nothing is configured. */
  constructor(
    private readonly config: GatehouseConfig,
    env: NodeJS.ProcessEnv,
    demoBaseUrl: string | null,
  ) {
    for (const settings of configuredProviders(config)) {
      const apiKey = settings.api_key ?? (settings.api_key_env ? env[settings.api_key_env] : undefined);
      const keySource = describeKeySource(settings, env);
      this.entries.set(settings.name, { settings, apiKey, keySource, demoWindow: null });
    }
    if (this.entries.size === 0) {
      if (demoBaseUrl === null)
        throw new Error('no provider is configured and the demo model is not running');
      this.entries.set(DEMO_PROVIDER, {
        settings: {
          name: DEMO_PROVIDER,
          base_url: demoBaseUrl,
          models: [{ name: DEMO_MODEL_NAME, context_window: config.demo_model.context_window }],
          context_window: config.demo_model.context_window,
          reasoning_format: 'reasoning_effort',
        },
        apiKey: undefined,
        keySource: 'the api_key for this provider',
        demoWindow: config.demo_model.context_window,
      });
    }
    this.names = [...this.entries.keys()];
    const wanted = config.default_provider;
    this.defaultProvider = wanted !== undefined && this.entries.has(wanted) ? wanted : this.names[0]!;
  }

  /** Whether anything but the built-in demo model is configured. */
  static needsDemo(config: GatehouseConfig): boolean {
    return configuredProviders(config).length === 0;
  }

  defaultModel(provider: string): string {
    return this.entry(provider).settings.models[0]!.name;
  }

  /** The default provider and its default model: what a turn that chose nothing runs on. */
  defaultChoice(): ModelChoice {
    return { provider: this.defaultProvider, model: this.defaultModel(this.defaultProvider), base_url: null };
  }

  acceptsReasoning(provider: string): boolean {
    return this.entry(provider).settings.reasoning_format !== 'none';
  }

  modelList(provider: string): readonly string[] | null {
    const entry = this.entry(provider);
    // The `model:` block names one model and the demo answers any: neither is a list to check.
    const modelBlock = this.config.model !== undefined && provider === MODEL_BLOCK_PROVIDER;
    if (modelBlock || entry.demoWindow !== null) return null;
    return entry.settings.models.map((m) => m.name);
  }

  describe(): ProviderDescription[] {
    return this.names.map((name) => ({
      name,
      default: name === this.defaultProvider,
      models: this.entry(name).settings.models.map((m) => m.name),
      any_model: this.modelList(name) === null,
      demo: this.entry(name).demoWindow !== null,
    }));
  }

  /** The model client of a session: its own base_url, its frozen provider, or the default. */
  model(policy: ModelChoice, apiKey: string | undefined): ChatModel {
    if (policy.base_url)
      return this.observed(
        this.client(policy.base_url, apiKey, SESSION_KEY_SOURCE, policy.model, 'reasoning_effort'),
        CUSTOM_PROVIDER,
        policy.model,
      );
    const name = policy.provider ?? this.defaultProvider;
    const entry = this.entries.get(name);
    if (!entry) return unavailable(name);
    return this.observed(
      this.client(
        entry.settings.base_url,
        apiKey ?? entry.apiKey,
        apiKey !== undefined ? SESSION_KEY_SOURCE : entry.keySource,
        policy.model,
        entry.settings.reasoning_format,
      ),
      name,
      policy.model,
    );
  }

  /** The price of a session's model (docs/cost.md): configured, else built in, else null. */
  price(policy: ModelChoice): ModelPrice | null {
    const provider = policy.base_url ? CUSTOM_PROVIDER : (policy.provider ?? this.defaultProvider);
    return priceOf(this.config.pricing, provider, policy.model);
  }

  /** The provider's model name as a label: one it lists, else `other` (a session may name any). */
  modelLabel(provider: string, model: string): string {
    const entry = this.entries.get(provider);
    return entry?.settings.models.some((m) => m.name === model) ? model : OTHER_MODEL;
  }

  /** The client, announcing each call it ends on `events` (`model:call`); one per client and provider. */
  private observed(client: ModelClient, provider: string, defaultModel: string): ChatModel {
    let byProvider = this.observedClients.get(client);
    if (!byProvider) this.observedClients.set(client, (byProvider = new Map<string, ChatModel>()));
    let model = byProvider.get(provider);
    if (!model) byProvider.set(provider, (model = this.announcing(client, provider, defaultModel)));
    return model;
  }

  /**
   * The client, its answers priced (docs/cost.md: reported, else tokens × price, else unknown) and
   * labelled with the provider and model, each call announced on `events`.
   */
  private announcing(client: ChatModel, provider: string, defaultModel: string): ChatModel {
    return {
      complete: async (request) => {
        const name = request.model ?? defaultModel;
        const model = this.modelLabel(provider, name);
        const started = performance.now();
        const seconds = (): number => (performance.now() - started) / 1000;
        try {
          const answer = await client.complete(request);
          const price = priceOf(this.config.pricing, provider, name);
          const usage = { ...answer.usage, ...callCost(answer.usage, price), provider, model: name };
          this.events.emit('model:call', { provider, model, seconds: seconds(), ok: true, usage });
          return { ...answer, usage };
        } catch (error) {
          this.events.emit('model:call', { provider, model, seconds: seconds(), ok: false, usage: null });
          throw error;
        }
      },
    };
  }

  /** The context window of a session's model. */
  contextWindow(policy: ModelChoice): number {
    if (policy.base_url) return defaultContextWindow(policy.model);
    const entry = this.entries.get(policy.provider ?? this.defaultProvider);
    if (!entry) return defaultContextWindow(policy.model);
    const own = entry.settings.models.find((m) => m.name === policy.model)?.context_window;
    return own ?? entry.demoWindow ?? entry.settings.context_window ?? defaultContextWindow(policy.model);
  }

  private entry(name: string): Entry {
    const entry = this.entries.get(name);
    if (!entry) throw new Error(`unknown provider ${name}`);
    return entry;
  }

  private client(
    url: string,
    key: string | undefined,
    keySource: string,
    model: string,
    format: ReasoningFormat,
  ): ModelClient {
    const cacheKey = JSON.stringify([url, key ?? '', keySource, model, format]);
    let client = this.clients.get(cacheKey);
    if (!client) {
      client = new ModelClient({
        baseUrl: url,
        apiKey: key,
        keySource,
        model,
        reasoningFormat: format,
        ...modelClientLimits(this.config.model),
      });
      this.clients.set(cacheKey, client);
    }
    return client;
  }
}

/** The model of a session whose frozen provider left the configuration: every call says so. */
function unavailable(name: string): ChatModel {
  return {
    complete: () =>
      Promise.reject(
        new ModelError(
          'provider_unavailable',
          `This session's provider "${name}" is no longer configured: move the session to a configured one (/model in the chat, session.model over RPC, Model in the dashboard), or add it back to config.yaml.`,
        ),
      ),
  };
}
