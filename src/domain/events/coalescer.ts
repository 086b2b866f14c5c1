/**
 * Coalesces streamed deltas for viewers (SPEC LOC-11): consecutive deltas of the same kind are
 * merged into one event until a different event arrives or the flush interval passes. Order is kept:
 * a non-delta event first flushes whatever is pending, then passes through.
 */

export interface DeltaLike {
  type: string;
  text?: string;
}

export interface CoalescerTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realTimers: CoalescerTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export class DeltaCoalescer<E extends DeltaLike> {
  private pending: E | null = null;
  private timer: unknown = null;

  constructor(
    private readonly deliver: (event: E) => void,
    private readonly options: { deltaTypes: readonly string[]; intervalMs: number; timers?: CoalescerTimers },
  ) {}

  push(event: E): void {
    const isDelta = this.options.deltaTypes.includes(event.type) && typeof event.text === 'string';
    if (!isDelta) {
      this.flush();
      this.deliver(event);
      return;
    }
    if (this.pending && this.pending.type === event.type) {
      this.pending = { ...this.pending, text: (this.pending.text ?? '') + event.text };
      return;
    }
    this.flush();
    this.pending = event;
    if (this.options.intervalMs <= 0) {
      this.flush();
      return;
    }
    const timers = this.options.timers ?? realTimers;
    this.timer = timers.setTimeout(() => {
      this.timer = null;
      this.flush();
    }, this.options.intervalMs);
  }

  /** Delivers the pending merged delta now, if any. */
  flush(): void {
    if (this.timer !== null) {
      (this.options.timers ?? realTimers).clearTimeout(this.timer);
      this.timer = null;
    }
    const pending = this.pending;
    this.pending = null;
    if (pending) this.deliver(pending);
  }
}
