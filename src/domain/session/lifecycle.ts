/**
 * The session lifecycle decision of ENT-2, as pure functions. The store asks `decideAccess` what an
 * incoming message does to the entry on its key, then performs the answer in one transaction.
 *
 * Order matters and is the contract:
 *   1. no entry, or force_new      → create a fresh entry
 *   2. suspended                   → replace: new session_id, reason "suspended", hard wipe
 *   3. resume_pending              → keep the session_id and transcript; the flag stays set until the
 *                                    next turn completes (clearResumePending)
 *   4. anything else               → touch: return the entry with updated_at bumped
 * There is deliberately no idle or daily reset (seed 002 §6): time alone never ends a conversation.
 */
import type { SessionEntry, SessionSourceFields } from '../vocabulary.js';

export type AccessDecision =
  | { kind: 'create' }
  | { kind: 'replace'; reason: 'suspended' }
  | { kind: 'resume_pending' }
  | { kind: 'touch' };

export function decideAccess(
  entry: Pick<SessionEntry, 'suspended' | 'resume_pending'> | null,
  options: { forceNew?: boolean } = {},
): AccessDecision {
  if (entry === null || options.forceNew === true) return { kind: 'create' };
  if (entry.suspended) return { kind: 'replace', reason: 'suspended' };
  if (entry.resume_pending) return { kind: 'resume_pending' };
  return { kind: 'touch' };
}

/**
 * Whether a resume mark may be placed on an entry. A suspension is the stronger signal: a drain
 * timeout or crash recovery must never turn a /stop back into a resume.
 */
export function mayMarkResumePending(entry: Pick<SessionEntry, 'suspended'>): boolean {
  return !entry.suspended;
}

const SESSION_ID = /^\d{8}_\d{6}_[0-9a-f]{8}$/;

/** A physical session id, `YYYYMMDD_HHMMSS_<8hex>` in UTC. `randomHex` must be 8 lowercase hex digits. */
export function newSessionId(now: Date, randomHex: string): string {
  if (!/^[0-9a-f]{8}$/.test(randomHex)) {
    throw new RangeError(
      `session id suffix must be 8 lowercase hex digits, got ${JSON.stringify(randomHex)}`,
    );
  }
  const iso = now.toISOString(); // 2026-11-29T17:35:23.000Z
  const date = iso.slice(0, 10).replaceAll('-', '');
  const time = iso.slice(11, 19).replaceAll(':', '');
  return `${date}_${time}_${randomHex}`;
}

export function isSessionId(value: string): boolean {
  return SESSION_ID.test(value);
}

/** A fresh entry for a key: zero counters, no flags. The caller sets flags that explain why it exists. */
/** The token and cost counters of a fresh entry (create, reset). */
export const ZERO_COUNTERS = {
  input_tokens: 0,
  output_tokens: 0,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  total_tokens: 0,
  last_prompt_tokens: 0,
  estimated_cost_usd: 0,
} as const;

export function newEntry(
  sessionKey: string,
  sessionId: string,
  source: SessionSourceFields,
  now: string,
): SessionEntry {
  return {
    session_key: sessionKey,
    session_id: sessionId,
    created_at: now,
    updated_at: now,
    origin: source,
    display_name: source.chat_name,
    platform: source.platform,
    chat_type: source.chat_type,
    ...ZERO_COUNTERS,
    cost_status: 'unknown',
    was_auto_reset: false,
    auto_reset_reason: null,
    reset_had_activity: false,
    is_fresh_reset: false,
    expiry_finalized: false,
    suspended: false,
    resume_pending: false,
    resume_reason: null,
    last_resume_marked_at: null,
  };
}
