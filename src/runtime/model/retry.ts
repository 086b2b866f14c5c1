/**
 * The retry decision of the model client, kept pure so it can be tested without a server.
 * Retried: 429, 5xx, connection failures and timeouts before any output. Never retried: other 4xx
 * (the request itself is wrong), a bad_response (an answer that is not one: repeating the request
 * gets the same) and anything after output has reached the caller (the caller
 * already showed it; a second answer would duplicate it).
 */
export interface RetryPolicy {
  /** Retries after the first attempt (0 = never retry). */
  maxRetries: number;
  /** First backoff; doubled each retry. */
  baseDelayMs: number;
  /** Upper bound of one wait, including a server's Retry-After. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxRetries: 3, baseDelayMs: 500, maxDelayMs: 30_000 };

export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/**
 * Parses a Retry-After header: delay-seconds or an HTTP date. Returns milliseconds, or null when
 * absent or unreadable. `now` is injectable for tests.
 */
export function parseRetryAfter(header: string | null | undefined, now = Date.now()): number | null {
  if (!header) return null;
  const trimmed = header.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now);
}

/**
 * How long to wait before retry number `retry` (1-based): exponential backoff with full jitter,
 * or the server's Retry-After when it gave one (a server that names a time knows best).
 */
export function retryDelayMs(
  policy: RetryPolicy,
  retry: number,
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== null) return Math.min(policy.maxDelayMs, retryAfterMs);
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  // Half fixed, half random: spreads concurrent clients without ever retrying instantly.
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
