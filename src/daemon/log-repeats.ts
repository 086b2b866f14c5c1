/**
 * Rate limiting of repeated log lines (issue 12 item 4): a message may be logged `perWindow` times
 * per window; further repeats are counted, not written, and once the window is over one summary
 * says how many were suppressed. Pure: the clock is passed in, the caller writes the lines. A flood
 * of refused upgrades or logins thus costs the log a bounded number of lines per minute.
 */

export interface RepeatSummary {
  readonly key: string;
  readonly suppressed: number;
}

interface Window {
  start: number;
  count: number;
  suppressed: number;
}

export class RepeatLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly now: () => number = Date.now,
    readonly perWindow = 10,
    readonly windowMs = 60_000,
    /** Distinct messages tracked at once; past it a new message is logged unlimited. */
    private readonly maxKeys = 1000,
  ) {}

  /**
   * Whether to write this occurrence of `key`, and the summary of its previous window when that
   * window just ended with suppressed repeats (to be written first).
   */
  admit(key: string): { write: boolean; summary: RepeatSummary | null } {
    const now = this.now();
    let window = this.windows.get(key);
    let summary: RepeatSummary | null = null;
    if (window && now - window.start >= this.windowMs) {
      if (window.suppressed > 0) summary = { key, suppressed: window.suppressed };
      this.windows.delete(key);
      window = undefined;
    }
    if (!window) {
      if (this.windows.size >= this.maxKeys) this.forgetQuiet(now);
      if (this.windows.size >= this.maxKeys) return { write: true, summary };
      window = { start: now, count: 0, suppressed: 0 };
      this.windows.set(key, window);
    }
    if (window.count < this.perWindow) {
      window.count += 1;
      return { write: true, summary };
    }
    window.suppressed += 1;
    return { write: false, summary };
  }

  /** Summaries of windows that are over (all windows when `everything`), which are then forgotten. */
  due(everything = false): RepeatSummary[] {
    const now = this.now();
    const summaries: RepeatSummary[] = [];
    for (const [key, window] of this.windows) {
      if (!everything && now - window.start < this.windowMs) continue;
      if (window.suppressed > 0) summaries.push({ key, suppressed: window.suppressed });
      this.windows.delete(key);
    }
    return summaries;
  }

  private forgetQuiet(now: number): void {
    for (const [key, window] of this.windows) {
      if (window.suppressed === 0 && now - window.start >= this.windowMs) this.windows.delete(key);
    }
  }
}
