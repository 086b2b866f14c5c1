/**
 * Waiting out a store that cannot be written (a full disk, issue 26 item 5), shared by both
 * engines: a write the store refused as `storage_unavailable` rolled back whole (nothing of it was
 * stored), so the same write is tried again, 100 ms later, doubling, at most 5 s apart, until it goes
 * through. The write that failed is the probe: there is no store-wide "healthy again" signal, and a
 * write that fits again goes on at once even while another still cannot. Only writes that are one
 * transaction and fenced or idempotent may be waited out this way.
 */
import { GatehouseError } from '../errors.js';

/** Whether a store operation failed because the store cannot be written now (nothing was written). */
export function storageUnavailable(error: unknown): error is GatehouseError {
  return error instanceof GatehouseError && error.reason === 'storage_unavailable';
}

/** The wait before the n-th retry of an operation the store refused: 100 ms, doubling, at most 5 s. */
export function storageRetryMs(attempt: number): number {
  return Math.min(5_000, 100 * 2 ** Math.max(0, attempt));
}

/** What a wait tells its engine: each refusal (`attempt` from 0), then the write that went through. */
export interface StorageWaitHooks {
  waiting(error: string, attempt: number, retryInMs: number): void;
  back(): void;
  /**
   * Checked after each refusal: true ends the wait and the refusal is thrown (a drain, a halt, the
   * turn was stopped). Absent: the wait lasts until the write goes through.
   */
  stop?(): boolean;
  /** Ends a wait early, as `stop` does, once it aborts. */
  signal?: AbortSignal;
}

/** Runs `write`, and again after each `storage_unavailable` refusal, until it goes through. */
export async function whenStored<T>(write: () => Promise<T>, hooks: StorageWaitHooks): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      const value = await write();
      if (attempt > 0) hooks.back();
      return value;
    } catch (error) {
      if (!storageUnavailable(error) || ended(hooks)) throw error;
      const retryInMs = storageRetryMs(attempt);
      hooks.waiting(error.message, attempt, retryInMs);
      await pause(retryInMs, hooks.signal);
      if (ended(hooks)) throw error;
    }
  }
}

function ended(hooks: StorageWaitHooks): boolean {
  return hooks.stop?.() === true || hooks.signal?.aborted === true;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
