/**
 * What a compression did, as both engines record it (issue 26 item 1): a local session's receipt
 * lineage step and every compression child's row (chat-platform sessions have no receipt) carry
 * these same facts.
 */
import type { PreparedCompression } from '../../runtime/context/prepare.js';
import type { CompressionStep } from '../ports/session-store.js';

export function compressionStep(prepared: Extract<PreparedCompression, { kind: 'ready' }>): CompressionStep {
  const step: CompressionStep = { method: prepared.method };
  if (prepared.method === 'dropped') {
    step.dropped = prepared.dropped;
    if (prepared.summaryError !== undefined) step.summary_error = prepared.summaryError;
  }
  return step;
}
