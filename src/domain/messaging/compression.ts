/**
 * Compressing a chat-platform session (SPEC LIN-1): the platform counterpart of
 * domain/local/compression.ts. The summary first; then ONE transaction writes the child transcript
 * (linked to its parent), moves the session key's route to it and closes the parent. The caller
 * holds the lane's turn slot (inside a turn, or a /compress command while nothing runs), so a
 * compression never runs beside a turn of the same session. A failed summary starts a growing
 * cooldown kept in the store (subject: the session key) and the oldest exchanges are dropped instead
 * (runtime/context/prepare.ts), so the conversation still fits its window.
 */
import { randomBytes } from 'node:crypto';
import { newSessionId } from '../session/lifecycle.js';
import type { TypedEmitter } from '../events/typed-emitter.js';
import type { CompressionReason } from '../../runtime/context/budget.js';
import {
  prepareCompression,
  type CompressionMethod,
  type CompressionSettings,
} from '../../runtime/context/prepare.js';
import { compressionNotice } from '../session/compression-notice.js';
import { coolingDown, recordFailedCompression } from '../session/compression-backoff.js';
import { compressionStep } from '../session/compression-step.js';
import type { ChatModel } from '../../runtime/model/client.js';
import type { TranscriptMessage } from '../vocabulary.js';
import type { SessionStore } from '../ports/session-store.js';
import type { MessagingEvents } from './events.js';

export interface PlatformCompressionDeps {
  readonly store: SessionStore;
  readonly model: ChatModel;
  readonly modelName: string | undefined;
  readonly settings: CompressionSettings;
  readonly events: TypedEmitter<MessagingEvents>;
}

export type PlatformCompression =
  | {
      kind: 'compressed';
      sessionId: string;
      messages: TranscriptMessage[];
      method: CompressionMethod;
      before: { messages: number; tokens: number };
      after: { messages: number; tokens: number };
    }
  | { kind: 'skipped'; reason: string };

export async function compressPlatformSession(
  deps: PlatformCompressionDeps,
  sessionKey: string,
  parentSessionId: string,
  reason: CompressionReason,
  signal?: AbortSignal,
): Promise<PlatformCompression> {
  const now = new Date();
  // While the summariser cools down, the transcript is still kept inside the window: without a summary.
  const waiting = await coolingDown(deps.store, sessionKey, reason, now);
  const prepared = await prepareCompression({
    messages: await deps.store.loadTranscript(parentSessionId),
    model: deps.model,
    modelName: deps.modelName,
    settings: deps.settings,
    signal,
    noSummary: waiting ?? undefined,
  });
  if (prepared.kind === 'nothing') return { kind: 'skipped', reason: prepared.reason };
  if (prepared.kind === 'failed') return { kind: 'skipped', reason: prepared.error };
  if (prepared.summaryError !== undefined) {
    const backoff = await recordFailedCompression(deps.store, sessionKey, prepared.summaryError, now);
    deps.events.emit('compression:failed', {
      session_key: sessionKey,
      error: prepared.summaryError,
      retry_after: backoff.retryAfter,
    });
  }
  const at = new Date();
  const child = newSessionId(at, randomBytes(4).toString('hex'));
  const published = await deps.store.publishCompression({
    sessionKey,
    parentSessionId,
    childSessionId: child,
    messages: prepared.messages,
    // Only a real summary ends the cooldown: after a reduction the next summary still waits.
    backoffSubject: prepared.method === 'summary' ? sessionKey : null,
    // The lineage record a local session keeps in its receipt, on the child's row (issue 26 item 1).
    step: compressionStep(prepared),
    now: at,
  });
  if (!published)
    return { kind: 'skipped', reason: 'the conversation moved to another transcript meanwhile' };
  deps.events.emit('transcript:replaced', {
    session_key: sessionKey,
    kind: 'compression',
    session_id: child,
  });
  deps.events.emit('session:compressed', {
    session_key: sessionKey,
    reason,
    messages_before: prepared.before.messages,
    messages_after: prepared.after.messages,
    tokens_before: prepared.before.tokens,
    tokens_after: prepared.after.tokens,
    method: prepared.method,
  });
  return {
    kind: 'compressed',
    sessionId: child,
    messages: prepared.messages,
    method: prepared.method,
    before: prepared.before,
    after: prepared.after,
  };
}

/** The one-line answer to /compress. */
export function describeCompression(outcome: PlatformCompression): string {
  if (outcome.kind === 'skipped') return `Nothing was compressed: ${outcome.reason}.`;
  const notice = compressionNotice({
    messages_before: outcome.before.messages,
    messages_after: outcome.after.messages,
    method: outcome.method,
  });
  return `Compressed the conversation: ${notice} (${outcome.before.tokens} → ${outcome.after.tokens} tokens).`;
}
