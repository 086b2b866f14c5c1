/** The timers a platform turn runs under: the typing indicator and its wall-clock limit. */
import type { PlatformAdapter } from './adapter.js';
import { TURN_TIMEOUT } from '../../runtime/runner.js';

/**
 * `limits.turn_timeout_s`: aborts the turn like /stop, with the reason turn_timeout, once it has run
 * `limitMs`. The runner then settles it failed/turn_timeout and its reply tells the chat why (once,
 * on the ledger like any reply). Returns the function that disarms it.
 */
export function timeLimit(abort: AbortController, limitMs: number | null): () => void {
  if (limitMs === null) return () => {};
  const timer = setTimeout(() => abort.abort(TURN_TIMEOUT), limitMs);
  timer.unref();
  return () => clearTimeout(timer);
}

/** When "typing…" is shown while a turn runs (TurnDeps.typing). */
export interface TypingClock {
  /** How long a turn runs before the indicator is first shown. */
  readonly delayMs: number;
  /** How often it is shown again while the turn goes on (platforms let it lapse after 5–10 s). */
  readonly intervalMs: number;
}

/**
 * Shows "typing…" once the turn has run `delayMs`, then every `intervalMs`, until the returned
 * function is called. Most answers arrive before anyone could see an indicator, and each one costs
 * a request under the platform's global rate limit (Discord: 50 requests/s per bot), so a quick
 * turn sends none (docs/decisions.md).
 */
export function keepTyping(
  adapter: PlatformAdapter,
  chatId: string,
  threadId: string | null,
  clock: TypingClock,
): () => void {
  const tick = () => void adapter.sendTyping(chatId, threadId).catch(() => undefined);
  let repeat: NodeJS.Timeout | null = null;
  const first = setTimeout(() => {
    tick();
    repeat = setInterval(tick, clock.intervalMs).unref();
  }, clock.delayMs).unref();
  return () => {
    clearTimeout(first);
    if (repeat !== null) clearInterval(repeat);
  };
}
