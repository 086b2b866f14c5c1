/**
 * The daemon lifecycle as an explicit state machine:
 *
 *   starting ──ready──▶ ready ──drain──▶ draining ──stopped──▶ stopped
 *      │                  │                 │
 *      └──────────────────┴──── fail ───────┴──▶ failed
 *
 * `starting` may also go straight to `draining` (a signal during start-up), so services already
 * started are drained and stopped in order. `stopped` and `failed` are final. The decision is the
 * pure `transition`; `Lifecycle` applies it and announces each state as a typed event that
 * services, logs and tests wait on.
 */
import { EventEmitter } from 'node:events';

export type LifecycleState = 'starting' | 'ready' | 'draining' | 'stopped' | 'failed';

export type LifecycleEvent =
  | { type: 'ready' }
  | { type: 'drain'; reason: string }
  | { type: 'stopped' }
  | { type: 'fail'; error: string };

export class IllegalTransition extends Error {
  override readonly name = 'IllegalTransition';
  constructor(
    readonly from: LifecycleState,
    readonly event: LifecycleEvent['type'],
  ) {
    super(`the daemon cannot go "${event}" while ${from}`);
  }
}

const TABLE: Record<LifecycleState, Partial<Record<LifecycleEvent['type'], LifecycleState>>> = {
  starting: { ready: 'ready', drain: 'draining', fail: 'failed' },
  ready: { drain: 'draining', fail: 'failed' },
  draining: { stopped: 'stopped', fail: 'failed' },
  stopped: {},
  failed: {},
};

/** Pure: the next state, or the typed reason the event is not allowed now. */
export function transition(state: LifecycleState, event: LifecycleEvent): LifecycleState | IllegalTransition {
  return TABLE[state][event.type] ?? new IllegalTransition(state, event.type);
}

export interface LifecycleEvents {
  'lifecycle:ready': [];
  'lifecycle:draining': [reason: string];
  'lifecycle:stopped': [];
  'lifecycle:failed': [error: string];
}

export class Lifecycle {
  #state: LifecycleState = 'starting';
  readonly #events = new EventEmitter<LifecycleEvents>();

  get state(): LifecycleState {
    return this.#state;
  }

  /** Whether new input may be admitted. False while draining: callers answer `runtime_draining`. */
  accepting(): boolean {
    return this.#state === 'ready';
  }

  /** Applies `event` or throws IllegalTransition, leaving the state unchanged. */
  apply(event: LifecycleEvent): LifecycleState {
    const next = transition(this.#state, event);
    if (next instanceof IllegalTransition) throw next;
    this.#state = next;
    switch (event.type) {
      case 'ready':
        this.#events.emit('lifecycle:ready');
        break;
      case 'drain':
        this.#events.emit('lifecycle:draining', event.reason);
        break;
      case 'stopped':
        this.#events.emit('lifecycle:stopped');
        break;
      case 'fail':
        this.#events.emit('lifecycle:failed', event.error);
        break;
    }
    return next;
  }

  on<E extends keyof LifecycleEvents>(name: E, listener: (...args: LifecycleEvents[E]) => void): () => void {
    this.#events.on(name, listener as never);
    return () => this.#events.off(name, listener as never);
  }

  /**
   * Resolves when the lifecycle reaches `state` (at once if it is there). Rejects if the daemon
   * ends (stopped or failed) without passing through it, so a waiter never hangs.
   */
  reached(state: 'ready' | 'draining' | 'stopped' | 'failed'): Promise<void> {
    if (this.#state === state) return Promise.resolve();
    if (this.#state === 'stopped' || this.#state === 'failed' || ORDER[this.#state] > ORDER[state]) {
      return Promise.reject(new Error(`the daemon is ${this.#state} and will never be ${state}`));
    }
    return new Promise((resolve, reject) => {
      const offs = (['ready', 'draining', 'stopped', 'failed'] as const).map((name) =>
        this.on(`lifecycle:${name}`, () => {
          if (name !== state && name !== 'stopped' && name !== 'failed') return;
          for (const off of offs) off();
          if (name === state) resolve();
          else reject(new Error(`the daemon ${name} before it was ${state}`));
        }),
      );
    });
  }
}

/** Progress along the normal path; `failed` sorts last so every other target is behind it. */
const ORDER: Record<LifecycleState, number> = { starting: 0, ready: 1, draining: 2, stopped: 3, failed: 4 };
