/**
 * Compressing a local session (SPEC LIN-1): the summary first, then ONE transaction publishes the
 * child transcript, the receipt's private current_session_id with its new lineage step, and the
 * route. The logical id, the frozen policy, the owner and the queued admissions do not change.
 * The caller holds the session's turn slot (a turn, or TurnScheduler.exclusive), so a compression
 * never runs beside a turn of the same session.
 *
 * A failed summary leaves the transcript untouched, is told to viewers (`session.compression_failed`)
 * and starts a growing cooldown kept in the store, so a restart does not reset it. Automatic
 * compressions respect the cooldown; one a human asks for is always tried.
 */
import { randomBytes } from 'node:crypto';
import type { CompressOutcome, CompressionReason } from '../../runtime/context/budget.js';
import { prepareCompression, type CompressionSettings } from '../../runtime/context/prepare.js';
import { coolingDown, recordFailedCompression } from '../session/compression-backoff.js';
import type { ChatModel } from '../../runtime/model/client.js';
import type { LocalSessionStore } from '../ports/local-store.js';
import type { SessionStore } from '../ports/session-store.js';
import { newSessionId } from '../session/lifecycle.js';
import type { LaunchPolicy } from './launch-policy.js';
import { localSessionKey, type CreationReceipt } from './receipt.js';

export interface LocalCompressionDeps {
  store: LocalSessionStore;
  sessions: SessionStore;
  /** The model that writes the summary (the session's own), and its context settings. */
  model(policy: LaunchPolicy, apiKey: string | undefined): ChatModel;
  settings(policy: LaunchPolicy): CompressionSettings;
  apiKey(logicalId: string): string | undefined;
  receipt(logicalId: string): CreationReceipt | undefined;
  /** The receipt this compression committed: the validated one from now on. */
  advanced(receipt: CreationReceipt): void;
  publish(logicalId: string, event: { type: string; [field: string]: unknown }): void;
  /** After the commit: 'transcript:replaced' for the agent cache. */
  replaced(logicalId: string, sessionId: string): void;
  /** Named test-only fault points (crash tests); inert in production. */
  fault?: (point: 'compress.summarised' | 'compress.committed') => void;
  now?: () => Date;
}

export async function compressLocalSession(
  deps: LocalCompressionDeps,
  logicalId: string,
  reason: CompressionReason,
  signal?: AbortSignal,
): Promise<CompressOutcome> {
  const receipt = deps.receipt(logicalId);
  if (!receipt) return { kind: 'skipped', reason: 'the session is paused: its receipt did not validate' };
  const now = deps.now?.() ?? new Date();
  const waiting = await coolingDown(deps.sessions, logicalId, reason, now);
  if (waiting !== null) return { kind: 'skipped', reason: waiting };
  const parent = receipt.current_session_id;
  const messages = await deps.sessions.loadTranscript(parent);
  const policy = receipt.policy;
  const prepared = await prepareCompression({
    messages,
    model: deps.model(policy, deps.apiKey(logicalId)),
    modelName: policy.model,
    settings: deps.settings(policy),
    signal,
  });
  if (prepared.kind === 'nothing') return { kind: 'skipped', reason: prepared.reason };
  if (prepared.kind === 'failed') {
    const backoff = await recordFailedCompression(deps.sessions, logicalId, prepared.error, now);
    deps.publish(logicalId, {
      type: 'session.compression_failed',
      reason,
      error: prepared.error,
      failures: backoff.failures,
      retry_after: backoff.retryAfter,
    });
    return { kind: 'skipped', reason: prepared.error };
  }
  deps.fault?.('compress.summarised');
  const at = deps.now?.() ?? new Date();
  const child = newSessionId(at, randomBytes(4).toString('hex'));
  const advanced: CreationReceipt = {
    ...receipt,
    current_session_id: child,
    lineage: [...receipt.lineage, { kind: 'compression', from: parent, to: child, at: at.toISOString() }],
  };
  const committed = await deps.store.commitCompression({
    sessionKey: localSessionKey(logicalId),
    parentSessionId: parent,
    childSessionId: child,
    messages: prepared.messages,
    backoffSubject: logicalId,
    receipt: advanced,
    now: at,
  });
  if (!committed) return { kind: 'skipped', reason: 'the session moved to another transcript meanwhile' };
  deps.fault?.('compress.committed');
  deps.advanced(advanced);
  deps.replaced(logicalId, child);
  deps.publish(logicalId, {
    type: 'session.compressed',
    reason,
    messages_before: prepared.before.messages,
    messages_after: prepared.after.messages,
    tokens_before: prepared.before.tokens,
    tokens_after: prepared.after.tokens,
  });
  return { kind: 'compressed', messages: prepared.messages };
}
