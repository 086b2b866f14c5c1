/**
 * The per-session message queue (SPEC QUE-1..3) as a pure state machine. No I/O, no timers: the
 * gateway feeds it what happened and carries out what it returns.
 *
 * Terms:
 *   follow-up   A plain message sent while a turn runs. At most one is kept per session: a repeat
 *               send replaces it (burst collapse), so a user who types three lines gets one turn
 *               answering the latest.
 *   queued      A `/queue <text>` item. Each one is exactly one full turn, in arrival order, never
 *               merged with another and never replaced.
 *   wake-up     An internal event (a delegation finished, a scheduled notify+wake). It belongs to the
 *               session key, not to any human, so /stop, /new and /reset never drop it.
 *   slot        The "next-up" position: what runs as soon as the current turn ends.
 *   overflow    The FIFO behind the slot.
 *
 * Invariants (checked by the property test):
 * - every queued item starts exactly once, in order, unless /new or /reset cleared it;
 * - every wake-up starts exactly once;
 * - at most one follow-up is waiting at any time;
 * - at most one event is running.
 */

export type QueuedKind = 'message' | 'queued' | 'internal';

/** What the queue needs to know of an event; the payload is the caller's. */
export interface QueueItem<T> {
  readonly kind: QueuedKind;
  readonly payload: T;
}

export type QueueMode = 'idle' | 'running';

export interface SessionQueueState<T> {
  readonly mode: QueueMode;
  readonly slot: QueueItem<T> | null;
  readonly overflow: readonly QueueItem<T>[];
}

/** The result of one transition: the next state, and the event to start now (if any). */
export interface QueueStep<T> {
  readonly state: SessionQueueState<T>;
  readonly start: QueueItem<T> | null;
}

export function emptyQueue<T>(): SessionQueueState<T> {
  return { mode: 'idle', slot: null, overflow: [] };
}

/** How many events wait: overflow plus the slot (the seed's queue depth). */
export function queueDepth<T>(state: SessionQueueState<T>): number {
  return state.overflow.length + (state.slot === null ? 0 : 1);
}

/** An event arrived. Idle: it starts now (after anything put back). Running: it waits by its kind's rule. */
export function arrive<T>(state: SessionQueueState<T>, item: QueueItem<T>): QueueStep<T> {
  const placed = place(state, item);
  // Idle with events still waiting happens only after putBack: those go first, in order.
  return state.mode === 'idle' ? promote(placed) : { state: placed, start: null };
}

/** The running event ended (any outcome). The next waiting event starts, or the session goes idle. */
export function finish<T>(state: SessionQueueState<T>): QueueStep<T> {
  if (state.mode !== 'running') throw new Error('finish: no event is running');
  return promote({ ...state, mode: 'idle' });
}

/**
 * QUE-3: a promoted event could not be started (no adapter can take it). It goes back to the front
 * and the session is idle again until the caller retries with `resume`.
 */
export function putBack<T>(state: SessionQueueState<T>, item: QueueItem<T>): SessionQueueState<T> {
  if (state.mode !== 'running') throw new Error('putBack: the event was not started');
  const overflow = state.slot === null ? state.overflow : [state.slot, ...state.overflow];
  // A follow-up that was already promoted is owed its turn: a later send must not collapse it away.
  const owed: QueueItem<T> = item.kind === 'message' ? { ...item, kind: 'queued' } : item;
  return { mode: 'idle', slot: owed, overflow };
}

/** Starts the next waiting event if the session is idle (after putBack, or after a command). */
export function resume<T>(state: SessionQueueState<T>): QueueStep<T> {
  if (state.mode === 'running') return { state, start: null };
  return promote(state);
}

/**
 * /stop: drops the human follow-up only. Queued items and wake-ups stay. The running turn is
 * interrupted by the caller; its `finish` then promotes what is left.
 */
export function stop<T>(state: SessionQueueState<T>): SessionQueueState<T> {
  return normalise(state.mode, [state.slot, ...state.overflow].filter(notKind('message')));
}

/** /new and /reset: drops every human event (follow-up and queued); wake-ups stay, in order. */
export function clearForReset<T>(state: SessionQueueState<T>): SessionQueueState<T> {
  return normalise(
    state.mode,
    [state.slot, ...state.overflow].filter((item): item is QueueItem<T> => item?.kind === 'internal'),
  );
}

function place<T>(state: SessionQueueState<T>, item: QueueItem<T>): SessionQueueState<T> {
  if (item.kind === 'message') {
    // Burst collapse: the newest follow-up replaces the older one where it stands.
    if (state.slot?.kind === 'message') return { ...state, slot: item };
    const at = state.overflow.findIndex((waiting) => waiting.kind === 'message');
    if (at >= 0) return { ...state, overflow: state.overflow.map((w, i) => (i === at ? item : w)) };
  }
  if (state.slot === null) return { ...state, slot: item };
  return { ...state, overflow: [...state.overflow, item] };
}

function promote<T>(state: SessionQueueState<T>): QueueStep<T> {
  if (state.slot === null) return { state: { ...state, mode: 'idle' }, start: null };
  const [next = null, ...rest] = state.overflow;
  return { state: { mode: 'running', slot: next, overflow: rest }, start: state.slot };
}

function normalise<T>(mode: QueueMode, items: readonly (QueueItem<T> | null)[]): SessionQueueState<T> {
  const kept = items.filter((item): item is QueueItem<T> => item !== null);
  const [slot = null, ...overflow] = kept;
  return { mode, slot, overflow };
}

function notKind<T>(kind: QueuedKind) {
  return (item: QueueItem<T> | null): item is QueueItem<T> => item !== null && item.kind !== kind;
}
