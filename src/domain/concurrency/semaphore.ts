/**
 * A counting semaphore with FIFO waiters: the global limit on turns running at once. Waiters are
 * served strictly in arrival order, so no session starves.
 */
export class Semaphore {
  private available: number;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('capacity must be a positive integer');
    this.available = capacity;
  }

  get inUse(): number {
    return this.capacity - this.available;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  /**
   * Like acquire(), but gives up when `signal` aborts while it waits: resolves with null then, and
   * the place in line is given to the next waiter.
   */
  async acquireUnless(signal: AbortSignal): Promise<(() => void) | null> {
    if (signal.aborted) return null;
    if (this.available > 0) return this.acquire();
    let onAbort!: () => void;
    const aborted = new Promise<null>((resolve) => (onAbort = () => resolve(null)));
    signal.addEventListener('abort', onAbort, { once: true });
    let waiter!: () => void;
    const granted = new Promise<void>((resolve) => {
      waiter = resolve;
      this.waiters.push(resolve);
    });
    const won = await Promise.race([granted.then(() => true), aborted.then(() => false)]);
    signal.removeEventListener('abort', onAbort);
    if (!won) {
      const index = this.waiters.indexOf(waiter);
      if (index >= 0) this.waiters.splice(index, 1);
      // Granted in the same tick as the abort: hand the permit straight on.
      else this.releaser()();
      return null;
    }
    return this.releaser();
  }

  /** Resolves with a release function once a permit is held. Release is idempotent. */
  async acquire(): Promise<() => void> {
    if (this.available > 0) {
      this.available--;
    } else {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    return this.releaser();
  }

  /** The release of a permit just taken (idempotent): to the first waiter, else back to the pool. */
  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.available++;
    };
  }
}
