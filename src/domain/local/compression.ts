/**
 * Compressing a local session (SPEC LIN-1): the summary first, then ONE transaction publishes the
 * child transcript, the receipt's private current_session_id with its new lineage step, and the
 * route. The logical id, the frozen policy, the owner and the queued admissions do not change.
 * The caller holds the session's turn slot (a turn, or TurnScheduler.exclusive), so a compression
 * never runs beside a turn of the same session.
 *
 * A failed summary is told to viewers (`session.compression_failed`) and starts a growing cooldown
 * kept in the store, so a restart does not reset it; the transcript is shortened all the same, by
 * dropping its oldest exchanges (issue 26 item 1), so no request outgrows the window. Automatic
 * compressions during the cooldown drop without asking for a summary; one a human asks for always
 * tries a summary. The lineage step says which it was (`method`, `dropped`, `summary_error`).
 */
import { randomBytes } from 'node:crypto';
import type { CompressOutcome, CompressionReason } from '../../runtime/context/budget.js';
import {
  prepareCompression,
  type CompressionSettings,
  type PreparedCompression,
} from '../../runtime/context/prepare.js';
import { coolingDown, recordFailedCompression } from '../session/compression-backoff.js';
import { compressionStep } from '../session/compression-step.js';
import type { ChatModel } from '../../runtime/model/client.js';
import type { LocalSessionStore } from '../ports/local-store.js';
import type { SessionStore } from '../ports/session-store.js';
import { newSessionId } from '../session/lifecycle.js';
import type { LaunchPolicy } from './launch-policy.js';
import { localSessionKey, type CreationReceipt, type LineageStep } from './receipt.js';

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
  // While the summariser cools down, the transcript is still kept inside the window: without a summary.
  const waiting = await coolingDown(deps.sessions, logicalId, reason, now);
  const parent = receipt.current_session_id;
  const messages = await deps.sessions.loadTranscript(parent);
  const policy = receipt.policy;
  const prepared = await prepareCompression({
    messages,
    model: deps.model(policy, deps.apiKey(logicalId)),
    modelName: policy.model,
    settings: deps.settings(policy),
    signal,
    noSummary: waiting ?? undefined,
  });
  if (prepared.kind === 'nothing') return { kind: 'skipped', reason: prepared.reason };
  if (prepared.kind === 'failed') return { kind: 'skipped', reason: prepared.error };
  if (prepared.summaryError !== undefined) {
    const backoff = await recordFailedCompression(deps.sessions, logicalId, prepared.summaryError, now);
    deps.publish(logicalId, {
      type: 'session.compression_failed',
      reason,
      error: prepared.summaryError,
      failures: backoff.failures,
      retry_after: backoff.retryAfter,
      fallback: 'dropped',
    });
  }
  deps.fault?.('compress.summarised');
  const at = deps.now?.() ?? new Date();
  const child = newSessionId(at, randomBytes(4).toString('hex'));
  const advanced: CreationReceipt = {
    ...receipt,
    current_session_id: child,
    lineage: [...receipt.lineage, lineageStep(prepared, parent, child, at)],
  };
  const committed = await deps.store.commitCompression({
    sessionKey: localSessionKey(logicalId),
    parentSessionId: parent,
    childSessionId: child,
    messages: prepared.messages,
    // Only a real summary ends the cooldown: after a reduction the next summary still waits.
    backoffSubject: prepared.method === 'summary' ? logicalId : null,
    step: compressionStep(prepared),
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
    method: prepared.method,
    ...(prepared.method === 'dropped' ? { dropped: prepared.dropped } : {}),
  });
  return { kind: 'compressed', messages: prepared.messages };
}

/** The lineage step of a compression: how it shortened the transcript, and what it dropped or why. */
function lineageStep(
  prepared: Extract<PreparedCompression, { kind: 'ready' }>,
  from: string,
  to: string,
  at: Date,
): LineageStep {
  return { kind: 'compression', from, to, at: at.toISOString(), ...compressionStep(prepared) };
}
