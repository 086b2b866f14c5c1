/** The timers a platform turn runs under: the typing indicator and its wall-clock limit. */
import type { PlatformAdapter } from '../../domain/messaging/adapter.js';
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

/** Shows "typing…" now and every `intervalMs` until the returned function is called. */
export function keepTyping(
  adapter: PlatformAdapter,
  chatId: string,
  threadId: string | null,
  intervalMs: number,
): () => void {
  const tick = () => void adapter.sendTyping(chatId, threadId).catch(() => undefined);
  tick();
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
