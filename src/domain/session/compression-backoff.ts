/**
 * The cooldown after a failed compression summary, shared by local and chat-platform sessions. It
 * is kept in the store (a restart does not reset it): automatic compressions wait it out, one a
 * human asks for is always tried, and every failure in a row doubles it (compressionCooldownMs).
 */
import type { CompressionReason } from '../../runtime/context/budget.js';
import { compressionCooldownMs } from '../../runtime/context/prepare.js';
import type { CompressionBackoff, SessionStore } from '../ports/session-store.js';

/** Why an automatic compression must wait, or null when it may run now. */
export async function coolingDown(
  store: SessionStore,
  subject: string,
  reason: CompressionReason,
  now: Date,
): Promise<string | null> {
  if (reason === 'manual') return null;
  const backoff = await store.compressionBackoff(subject);
  if (!backoff || Date.parse(backoff.retryAfter) <= now.getTime()) return null;
  return `the last compression failed (${backoff.lastError}); the next try is after ${backoff.retryAfter}`;
}

/** Records one more failure in a row and returns the new backoff. */
export async function recordFailedCompression(
  store: SessionStore,
  subject: string,
  error: string,
  now: Date,
): Promise<CompressionBackoff> {
  const failures = ((await store.compressionBackoff(subject))?.failures ?? 0) + 1;
  const backoff = {
    failures,
    retryAfter: new Date(now.getTime() + compressionCooldownMs(failures)).toISOString(),
    lastError: error,
  };
  await store.recordCompressionFailure(subject, backoff);
  return backoff;
}
