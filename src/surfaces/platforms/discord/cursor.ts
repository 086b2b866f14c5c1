/**
 * A channel's catch-up cursor (migration 013), as a pure tracker: the newest message id such that
 * every message of the channel up to it was taken by the gateway. Messages are taken out of order
 * (a turn takes its message when it starts; the next one in the channel may be queued first), so
 * the cursor only passes a message once nothing older is still on its way in.
 */
export class ChannelCursor {
  /** Handed to the gateway, not taken yet. */
  private readonly pending = new Set<bigint>();
  /** Taken, newer than the cursor, waiting for an older pending one. */
  private ahead: bigint[] = [];

  constructor(private position: bigint) {}

  get value(): bigint {
    return this.position;
  }

  /** Whether anything of the channel is on its way in. */
  get busy(): boolean {
    return this.pending.size > 0;
  }

  handed(id: bigint): void {
    if (id > this.position) this.pending.add(id);
  }

  /** Marks `id` taken; returns the new cursor when it moved, else null. */
  taken(id: bigint): bigint | null {
    this.pending.delete(id);
    if (id > this.position) this.ahead.push(id);
    let floor: bigint | null = null;
    for (const p of this.pending) if (floor === null || p < floor) floor = p;
    let next = this.position;
    for (const a of this.ahead) if ((floor === null || a < floor) && a > next) next = a;
    if (next === this.position) return null;
    this.position = next;
    this.ahead = this.ahead.filter((a) => a > next);
    return next;
  }
}

/** Snowflakes are 64-bit integers written in decimal; their order is their time order. */
export function snowflake(id: string): bigint {
  return BigInt(id);
}
