/**
 * Typed lifecycle events of the RPC surface. Logs, the gateway (which detaches viewers on close)
 * and tests all listen here; tests wait on an event rather than sleeping.
 */
import { EventEmitter, once } from 'node:events';
import type { ViewerConnection } from './connection.js';

export type CloseCause =
  'client' | 'slow_consumer' | 'server_shutdown' | 'error' | 'password_changed' | 'signed_out';

export interface RpcSurfaceEvents {
  'connection:open': [connection: ViewerConnection];
  'connection:close': [connection: ViewerConnection, cause: CloseCause];
}

export class TypedEmitter<Events extends Record<keyof Events, unknown[]>> {
  private readonly emitter = new EventEmitter();

  on<K extends keyof Events & string>(event: K, listener: (...args: Events[K]) => void): this {
    this.emitter.on(event, listener as (...args: unknown[]) => void);
    return this;
  }

  off<K extends keyof Events & string>(event: K, listener: (...args: Events[K]) => void): this {
    this.emitter.off(event, listener as (...args: unknown[]) => void);
    return this;
  }

  emit<K extends keyof Events & string>(event: K, ...args: Events[K]): void {
    this.emitter.emit(event, ...args);
  }

  /** Resolves with the arguments of the next `event`. */
  async next<K extends keyof Events & string>(event: K): Promise<Events[K]> {
    return (await once(this.emitter, event)) as Events[K];
  }
}
