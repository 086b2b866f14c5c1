/**
 * A write round: what the viewer connections were given to send during one turn of the event loop,
 * written once per connection when that turn ends (issue 32 aim 5).
 *
 * On loopback every write costs the daemon a trip through the peer's whole TCP receive path, and
 * with a thousand viewers that system call, not the JSON, is most of what an event costs. A turn's
 * events come in bursts (`turn.start` and the stored question; the last delta, the stored answer,
 * `turn.complete` and `admission.settled`), often from several promise continuations of one I/O
 * callback, so the round ends in `setImmediate`: after everything the loop is running now, and
 * before it waits for more I/O.
 *
 * A round that took long to write (many viewers: a thousand writes take several milliseconds)
 * holds the next one back by as long as it took, at most HOLD_CAP_MS, so the frames that arrive
 * meanwhile leave in one write per viewer instead of one each: the writes then take at most about
 * half the loop, and the events of one turn leave in fewer bursts. A round that wrote quickly
 * (a few viewers) holds nothing back: its frames leave in the same turn of the loop as before.
 * Only event frames wait: a reply (or any frame sent through `ws`) hurries the round it joins to
 * the end of the loop's turn, so no caller waits on the fan-out's hold for its answer.
 *
 * Every viewer of a session usually has the same run of event frames in a round, so the round
 * joins a run into one buffer once and every connection writes that same buffer.
 */

/** A round that took less than this to write holds the next one back not at all. */
export const HOLD_FROM_MS = 1;
/** The longest a round holds the next one back, whatever it took. */
export const HOLD_CAP_MS = 16;

/** Pure: how long the next round waits, given how long the last one took to write. */
export function holdAfter(lastFlushMs: number): number {
  if (!(lastFlushMs >= HOLD_FROM_MS)) return 0;
  return Math.min(lastFlushMs, HOLD_CAP_MS);
}

/** Runs `flush` after `delayMs` (0: at the end of this turn of the loop); returns its cancel. */
export type RoundScheduler = (flush: () => void, delayMs: number) => () => void;

const loopScheduler: RoundScheduler = (flush, delayMs) => {
  if (delayMs <= 0) {
    const immediate = setImmediate(flush);
    return () => clearImmediate(immediate);
  }
  const timer = setTimeout(flush, delayMs);
  return () => clearTimeout(timer);
};

/** A connection with something to write at the end of the round. */
export interface RoundMember {
  /** Writes what it gathered; `joined` gives one buffer for a run of frames. */
  flushRound(joined: (frames: readonly Buffer[]) => Buffer): void;
}

/** Pure: whether two runs hold the very same frames (the same buffers) in the same order. */
export function sameRun(a: readonly Buffer[], b: readonly Buffer[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class WriteRound {
  private members: RoundMember[] = [];
  private scheduled = false;
  /** The run joined last in the round being flushed, and its buffer: the next viewer's likely run. */
  private lastRun: readonly Buffer[] = [];
  private lastJoined: Buffer | null = null;
  /** How long the last flush took, in ms: the next round's hold (holdAfter). */
  private lastFlushMs = 0;
  /** The scheduled round's hold (0: it ends with the loop's turn) and how to cancel it. */
  private heldMs = 0;
  private cancel: (() => void) | null = null;

  constructor(
    private readonly schedule: RoundScheduler = loopScheduler,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** `member` is flushed when this round ends; a member joins a round once. */
  join(member: RoundMember): void {
    this.members.push(member);
    if (this.scheduled) return;
    this.scheduled = true;
    this.heldMs = holdAfter(this.lastFlushMs);
    this.cancel = this.schedule(() => this.flush(), this.heldMs);
  }

  /** A frame that must not wait (a reply) is in the round: it ends with this turn of the loop. */
  hurry(): void {
    if (!this.scheduled || this.heldMs === 0) return;
    this.cancel?.();
    this.heldMs = 0;
    this.cancel = this.schedule(() => this.flush(), 0);
  }

  /** One buffer for a run of frames; the run the previous member wrote is not joined again. */
  readonly joined = (frames: readonly Buffer[]): Buffer => {
    if (frames.length === 1) return frames[0]!;
    if (this.lastJoined && sameRun(frames, this.lastRun)) return this.lastJoined;
    this.lastRun = frames;
    this.lastJoined = Buffer.concat(frames);
    return this.lastJoined;
  };

  private flush(): void {
    const started = this.now();
    const members = this.members;
    // A member that sends again while being flushed joins the next round.
    this.members = [];
    this.scheduled = false;
    this.cancel = null;
    let failed: { error: unknown } | null = null;
    for (const member of members) {
      // One connection's failure must not leave the others' frames unwritten.
      try {
        member.flushRound(this.joined);
      } catch (error) {
        failed ??= { error };
      }
    }
    this.lastRun = [];
    this.lastJoined = null;
    this.lastFlushMs = this.now() - started;
    if (failed) throw failed.error;
  }
}

/** The daemon's one round: every connection's frames leave together, at the end of the round. */
export const writeRound = new WriteRound();
