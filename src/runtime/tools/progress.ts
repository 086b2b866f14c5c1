/**
 * Live progress of a running tool (issue 12 item 19): the last line it printed and how long it has
 * run, sent to viewers as `tool.output` while the command runs. Bounded by design whatever the
 * command prints: only a tail of at most TAIL_BYTES is kept (never the whole stream), and at most
 * one update leaves every PROGRESS_INTERVAL_MS, and only when something new was printed.
 */

/** What a tool reports while it runs (the runner adds the tool_call_id). */
export type ToolProgress = {
  /** The last non-empty line printed so far, at most LAST_LINE_CHARS characters. */
  last_line: string;
  /** Milliseconds since the command started. */
  elapsed_ms: number;
  /** Bytes printed so far, the part dropped by the output cap included. */
  bytes: number;
};

export const PROGRESS_INTERVAL_MS = 500;
export const TAIL_BYTES = 4096;
export const LAST_LINE_CHARS = 200;

// eslint-disable-next-line no-control-regex
const ESCAPES = /\u001b\[[0-9;?]*[A-Za-z]/g;
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f]/g;

/** The last non-empty line of a tail, flattened to one visible line of bounded length. */
export function lastLineOf(tail: string): string {
  const lines = tail.split(/\r?\n|\r/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!.replace(ESCAPES, '').replace(CONTROLS, ' ').trim();
    if (line !== '') return line.length > LAST_LINE_CHARS ? `${line.slice(-LAST_LINE_CHARS)}` : line;
  }
  return '';
}

/**
 * Collects a command's output chunks and reports progress at most every `intervalMs`. The first
 * chunk is reported at once (a viewer sees the command is alive), later ones at the next tick.
 */
export class ProgressReporter {
  private tail = Buffer.alloc(0);
  private bytes = 0;
  private dirty = false;
  private lastSent = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private readonly started = performance.now();
  private stopped = false;

  constructor(
    private readonly report: (progress: ToolProgress) => void,
    private readonly intervalMs = PROGRESS_INTERVAL_MS,
  ) {}

  push(chunk: Buffer): void {
    if (this.stopped) return;
    this.bytes += chunk.length;
    const joined = chunk.length >= TAIL_BYTES ? chunk : Buffer.concat([this.tail, chunk]);
    this.tail = Buffer.from(joined.subarray(Math.max(0, joined.length - TAIL_BYTES)));
    this.dirty = true;
    if (this.timer !== undefined) return; // the pending tick sends it
    const wait = this.lastSent + this.intervalMs - performance.now();
    if (wait <= 0) this.send();
    else this.timer = setTimeout(() => this.send(), wait);
  }

  /** No more reports (the tool finished: its result says the rest). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private send(): void {
    this.timer = undefined;
    if (this.stopped || !this.dirty) return;
    this.dirty = false;
    this.lastSent = performance.now();
    this.report({
      last_line: lastLineOf(this.tail.toString('utf8')),
      elapsed_ms: Math.round(this.lastSent - this.started),
      bytes: this.bytes,
    });
  }
}
