/** The `sessions.lineage_json` column (migration 024): a compression child's record, on both backends. */
import type { CompressionStep } from '../../domain/ports/session-store.js';

export function encodeCompressionStep(step: CompressionStep | undefined): string | null {
  return step === undefined ? null : JSON.stringify(step);
}

/** The stored record; null when the row has none (not a compression child, or written before 024). */
export function decodeCompressionStep(json: string | null | undefined): CompressionStep | null {
  if (json === null || json === undefined) return null;
  const value = JSON.parse(json) as Partial<CompressionStep>;
  const step: CompressionStep = { method: value.method === 'dropped' ? 'dropped' : 'summary' };
  if (typeof value.dropped === 'number') step.dropped = value.dropped;
  if (typeof value.summary_error === 'string') step.summary_error = value.summary_error;
  return step;
}
