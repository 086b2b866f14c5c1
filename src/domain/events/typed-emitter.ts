/**
 * Typed lifecycle events (`admission:committed`, `turn:start`, `recovery:done`, …). The same events
 * serve logs, metrics and tests: a test waits for an event with `next()`, never for a sleep.
 */
import { EventEmitter } from 'node:events';

export class TypedEmitter<Events extends Record<string, unknown>> {
  private readonly emitter = new EventEmitter({ captureRejections: false });

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  emit<K extends keyof Events & string>(name: K, payload: Events[K]): void {
    this.emitter.emit(name, payload);
    this.emitter.emit('*', { name, payload });
  }

  on<K extends keyof Events & string>(name: K, listener: (payload: Events[K]) => void): () => void {
    this.emitter.on(name, listener as (payload: unknown) => void);
    return () => this.emitter.off(name, listener as (payload: unknown) => void);
  }

  /** Every event, for logs and metrics. */
  onAny(
    listener: (event: { name: keyof Events & string; payload: Events[keyof Events] }) => void,
  ): () => void {
    this.emitter.on('*', listener);
    return () => this.emitter.off('*', listener);
  }

  /** Resolves with the next `name` event whose payload matches `predicate`. */
  next<K extends keyof Events & string>(
    name: K,
    predicate: (payload: Events[K]) => boolean = () => true,
    timeoutMs = 20_000,
  ): Promise<Events[K]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${name}`));
      }, timeoutMs);
      timer.unref?.();
      const off = this.on(name, (payload) => {
        if (!predicate(payload)) return;
        clearTimeout(timer);
        off();
        resolve(payload);
      });
    });
  }
}
