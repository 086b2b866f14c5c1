/**
 * The live line of a running tool on a terminal (issue 12 item 19): a spinner, the time the tool has
 * run and the last line it printed (`tool.output`), redrawn in place a few times a second and erased
 * before anything else is written, so the transcript above it stays exactly what it was.
 */
import type { Style } from './render.js';

const FRAMES = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';
export const SPINNER_INTERVAL_MS = 250;
/** Erase the current line and return to its start. */
const ERASE = '\r\u001b[2K';

/** The progress line itself (pure): fits in `columns` so redrawing never wraps. */
export function progressLine(
  frame: number,
  name: string,
  elapsedMs: number,
  lastLine: string,
  columns: number,
): string {
  const head = `${FRAMES[frame % FRAMES.length]} ${name} ${Math.floor(elapsedMs / 1000)}s`;
  const line = lastLine === '' ? head : `${head} · ${lastLine}`;
  const room = Math.max(10, columns - 1);
  return line.length > room ? `${line.slice(0, room - 1)}…` : line;
}

export class ToolSpinner {
  private timer: NodeJS.Timeout | undefined;
  private name = '';
  private lastLine = '';
  private startedAt = 0;
  private frame = 0;
  private drawn = false;

  constructor(
    private readonly write: (text: string) => void,
    private readonly style: Style,
    private readonly columns: () => number = () => process.stdout.columns || 80,
    private readonly now: () => number = Date.now,
  ) {}

  get running(): boolean {
    return this.timer !== undefined;
  }

  /** A tool started (or reported progress after a pause, e.g. an approval): show its line. */
  show(name: string, progress: { last_line?: unknown; elapsed_ms?: unknown } = {}): void {
    if (!this.running || name !== this.name) {
      this.name = name;
      this.lastLine = '';
      this.startedAt = this.now();
      this.timer = setInterval(() => this.draw(), SPINNER_INTERVAL_MS);
      this.timer.unref();
    }
    if (typeof progress.elapsed_ms === 'number') this.startedAt = this.now() - progress.elapsed_ms;
    if (typeof progress.last_line === 'string') this.lastLine = progress.last_line;
    this.draw();
  }

  /** Erases the line and stops redrawing (the result, a prompt or any other output comes next). */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.drawn) this.write(ERASE);
    this.drawn = false;
  }

  private draw(): void {
    const line = progressLine(
      this.frame++,
      this.name,
      this.now() - this.startedAt,
      this.lastLine,
      this.columns(),
    );
    this.write(`${ERASE}${this.style.dim(line)}`);
    this.drawn = true;
  }
}
