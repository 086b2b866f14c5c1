/**
 * A chat-platform write waited out while the store cannot be written (issue 26 item 5): the same
 * mechanism as the local engine's claims and settlements (session/storage-wait.ts), so a chat's
 * turn or delivery goes on by itself once storage is back, without a restart. Each wait is told as
 * `storage:waiting` (every refusal) and `storage:back` (the write went through).
 */
import type { TypedEmitter } from '../events/typed-emitter.js';
import { whenStored } from '../session/storage-wait.js';
import type { MessagingEvents, StorageOperation } from './events.js';

export interface StoredWrite {
  readonly events: TypedEmitter<MessagingEvents>;
  readonly sessionKey: string;
  readonly operation: StorageOperation;
  /** The turn's stop (/stop, /new, the drain's deadline): the wait ends and the refusal is thrown. */
  readonly signal?: AbortSignal | undefined;
  /** True once waiting makes no sense any more (the gateway halted or stopped delivering). */
  readonly stop?: () => boolean;
}

export function stored<T>(write: () => Promise<T>, how: StoredWrite): Promise<T> {
  const { events, sessionKey, operation } = how;
  return whenStored(write, {
    waiting: (error, attempt, retryInMs) =>
      events.emit('storage:waiting', {
        session_key: sessionKey,
        operation,
        error,
        attempt,
        retry_in_ms: retryInMs,
      }),
    back: () => events.emit('storage:back', { session_key: sessionKey, operation }),
    ...(how.stop ? { stop: how.stop } : {}),
    ...(how.signal ? { signal: how.signal } : {}),
  });
}
