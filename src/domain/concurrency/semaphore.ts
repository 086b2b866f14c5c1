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

  /** Resolves with a release function once a permit is held. Release is idempotent. */
  async acquire(): Promise<() => void> {
    if (this.available > 0) {
      this.available--;
    } else {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
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
