/**
 * A pass run on an interval and on demand, never two at once: the lifecycle the delegation runner
 * and the scheduled-jobs runner share. start() runs a pass now and then every `intervalMs`; tick()
 * asks for one; stop() stops the interval, refuses further passes and waits for the running one.
 *
 * What a tick asked while a pass runs does is the one rule the two differ on (`whileRunning`):
 *   'again': one more pass follows the running one (however many ticks asked during it), for work
 *            that may have arrived after the running pass read its rows (a turn just settled);
 *   'join':  nothing more; the caller waits for the running pass (the next interval picks up the rest).
 *
 * A pass that throws is handed to onError; the ticker goes on. The pass itself reads `stopped` to
 * end early between its steps.
 */
export type TickWhileRunning = 'again' | 'join';

export interface TickerOptions {
  intervalMs: number;
  whileRunning: TickWhileRunning;
  pass(): Promise<void>;
  onError(error: unknown): void;
}

export class Ticker {
  private timer: NodeJS.Timeout | null = null;
  /** The pass running now, settled (never rejects) when it ends. */
  private running: Promise<void> | null = null;
  /** A tick was asked during the running pass ('again' only). */
  private again = false;
  private stoppedValue = false;

  constructor(private readonly options: TickerOptions) {}

  /** True once stop() was called: no pass starts after it. */
  get stopped(): boolean {
    return this.stoppedValue;
  }

  start(): void {
    if (this.stoppedValue) throw new Error('a stopped ticker cannot start again');
    if (this.timer !== null) throw new Error('the ticker is already started');
    this.timer = setInterval(() => void this.tick(), this.options.intervalMs);
    void this.tick();
  }

  /** Resolves once the pass running (if any) has ended. */
  async stop(): Promise<void> {
    this.stoppedValue = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /**
   * Asks for a pass: starts one when none runs; otherwise applies `whileRunning`. Resolves when the
   * pass it started or joined ends (after stop: at once, or when the pass still running ends).
   */
  tick(): Promise<void> {
    if (this.running !== null) {
      if (!this.stoppedValue && this.options.whileRunning === 'again') this.again = true;
      return this.running;
    }
    if (this.stoppedValue) return Promise.resolve();
    // Through a promise's executor, so a pass that throws before its first await is caught too.
    const running = new Promise<void>((resolve) => resolve(this.options.pass()))
      .catch((error: unknown) => this.options.onError(error))
      .finally(() => {
        this.running = null;
        if (this.again && !this.stoppedValue) {
          this.again = false;
          void this.tick();
        }
      });
    this.running = running;
    return running;
  }
}
