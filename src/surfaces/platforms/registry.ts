/**
 * The platform registry: adapters are created by name, so a plugin can register a platform of its
 * own ("mastodon", "irc") next to the built-in ones. An unknown name is just a string to the rest of
 * Gatehouse: it round-trips through SessionSource and session keys (SRC-1).
 *
 * The messaging daemon service builds one adapter for every enabled section under `platforms:` in
 * the config, each through the factory registered under the section's name, with a PlatformConfig.
 * Telegram, Discord and Slack are registered as built-ins (builtinPlatforms). A factory may be
 * async: the built-in ones check their section first, then load their adapter and its SDK with
 * `import()`, so a daemon loads only the SDKs of the platforms it runs (and none when a section is
 * wrong: the error comes first).
 */
import { InvalidParamsError } from '../../domain/errors.js';
import type { PlatformAdapter } from '../../domain/messaging/adapter.js';
import type { PlatformCursors } from '../../domain/ports/platform-cursors.js';
import { discordFromConfig } from './discord/factory.js';
import { slackFromConfig } from './slack/factory.js';
import { telegramFromConfig } from './telegram/factory.js';

export type AdapterFactory<C = unknown> = (config: C) => PlatformAdapter | Promise<PlatformAdapter>;

/**
 * A factory's refusal to build its adapter: a secret its section names is not set, or holds the
 * wrong kind of value. The message names the platform and the key; the daemon fails its start with
 * it as it is.
 */
export class PlatformSetupError extends Error {
  override readonly name = 'PlatformSetupError';
}

/** What the daemon hands a platform's factory. */
export interface PlatformConfig {
  /** The section's name under `platforms:`, which is the platform's name. */
  readonly name: string;
  /**
   * The section as written, after the keys every platform shares (`enabled`,
   * `group_sessions_per_user`, `thread_sessions_per_user`, `redact_pii`) got their defaults. The
   * factory checks its own keys; a throw fails the daemon's start with its message.
   */
  readonly section: Readonly<Record<string, unknown>>;
  /** The daemon's environment: secrets are read from variables the section names, never the file. */
  readonly env: NodeJS.ProcessEnv;
  /**
   * The folder this platform keeps files its users send (photos, documents) in, inside the
   * profile's folder; created owner-only by the adapter when it first stores one.
   */
  readonly attachmentsDir: string;
  /** Catch-up cursors on the profile's store, for a platform that does not redeliver (Discord). */
  readonly cursors?: PlatformCursors;
}

/** A registry with the platforms Gatehouse ships: `telegram`, `discord`, `slack`. Plugins register theirs on it. */
export function builtinPlatforms(): PlatformRegistry {
  const registry = new PlatformRegistry();
  registry.register<PlatformConfig>('telegram', telegramFromConfig);
  registry.register<PlatformConfig>('discord', discordFromConfig);
  registry.register<PlatformConfig>('slack', slackFromConfig);
  return registry;
}

export class PlatformRegistry {
  private readonly factories = new Map<string, AdapterFactory<never>>();

  /** @throws InvalidParamsError when the name is empty or already taken. */
  register<C>(name: string, factory: AdapterFactory<C>): void {
    if (name.trim() === '') throw new InvalidParamsError('a platform name must not be empty');
    if (this.factories.has(name)) throw new InvalidParamsError(`platform "${name}" is already registered`);
    this.factories.set(name, factory);
  }

  has(name: string): boolean {
    return this.factories.has(name);
  }

  names(): string[] {
    return [...this.factories.keys()];
  }

  /** Rejects with InvalidParamsError for a name nobody registered, or with what the factory threw. */
  async create<C>(name: string, config: C): Promise<PlatformAdapter> {
    const factory = this.factories.get(name) as AdapterFactory<C> | undefined;
    if (factory === undefined) {
      throw new InvalidParamsError(
        `no platform named "${name}" is registered (known: ${this.names().join(', ') || 'none'})`,
      );
    }
    const adapter = await factory(config);
    if (adapter.platform !== name) {
      throw new InvalidParamsError(`the "${name}" factory made an adapter for "${adapter.platform}"`);
    }
    return adapter;
  }
}
