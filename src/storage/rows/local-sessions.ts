/** The local_sessions table's rows and their mapping to LocalSessionRow, shared by both backends. */
import type { LocalSessionRow } from '../../domain/ports/local-store.js';

/** A local_sessions row as both backends read it. */
export interface LocalSessionDbRow {
  logical_id: string;
  profile: string;
  owner_subject: string;
  owner_provider: string;
  request_id: string | null;
  source: string;
  title: string | null;
  hidden: number;
  generation: number;
  created_at: string;
  paused_reason: string | null;
  archived_at: string | null;
  forked_from: string | null;
  forked_message_id: number | null;
}

export function localSessionFromRow(row: LocalSessionDbRow): LocalSessionRow {
  return {
    logical_id: row.logical_id,
    profile: row.profile,
    owner: { subject: row.owner_subject, provider: row.owner_provider },
    request_id: row.request_id,
    source: row.source,
    title: row.title,
    hidden: row.hidden === 1,
    generation: row.generation,
    created_at: row.created_at,
    paused_reason: row.paused_reason,
    archived_at: row.archived_at,
    forked_from:
      row.forked_from === null
        ? null
        : { session_id: row.forked_from, message_id: row.forked_message_id ?? 0 },
  };
}
