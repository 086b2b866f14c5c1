/**
 * The platform registry: adapters are created by name, so a plugin can register a platform of its
 * own ("mastodon", "irc") next to the built-in ones. An unknown name is just a string to the rest of
 * Gatehouse: it round-trips through SessionSource and session keys (SRC-1).
 */
import { InvalidParamsError } from '../../domain/errors.js';
import type { PlatformAdapter } from '../../domain/messaging/adapter.js';

export type AdapterFactory<C = unknown> = (config: C) => PlatformAdapter;

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

  /** @throws InvalidParamsError for a name nobody registered. */
  create<C>(name: string, config: C): PlatformAdapter {
    const factory = this.factories.get(name) as AdapterFactory<C> | undefined;
    if (factory === undefined) {
      throw new InvalidParamsError(
        `no platform named "${name}" is registered (known: ${this.names().join(', ') || 'none'})`,
      );
    }
    const adapter = factory(config);
    if (adapter.platform !== name) {
      throw new InvalidParamsError(`the "${name}" factory made an adapter for "${adapter.platform}"`);
    }
    return adapter;
  }
}
