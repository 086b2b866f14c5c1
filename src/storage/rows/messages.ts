/** The messages table's rows and codec, shared by both backends: role and content, the rest as JSON. */
import type { MessageRole, TranscriptMessage } from '../../domain/vocabulary.js';
import type { StoredMessage } from '../../domain/ports/session-store.js';

/** Fields kept beside role and content; stored as one JSON object, absent when all are unset. */
const EXTRA_FIELDS = [
  'tool_calls',
  'tool_call_id',
  'name',
  'reasoning',
  'admission_id',
  'sender_name',
  'tool_outcome',
  'interrupted',
  'steer_id',
] as const satisfies readonly (keyof TranscriptMessage)[];

export interface MessageRow {
  id: number;
  session_id: string;
  role: string;
  content: string | null;
  extra_json: string | null;
  created_at: string;
}

export function extraJson(message: TranscriptMessage): string | null {
  const extra: Record<string, unknown> = {};
  let any = false;
  for (const field of EXTRA_FIELDS) {
    if (message[field] !== undefined) {
      extra[field] = message[field];
      any = true;
    }
  }
  return any ? JSON.stringify(extra) : null;
}

export function messageFromRow(row: MessageRow): StoredMessage {
  const extra = row.extra_json === null ? {} : (JSON.parse(row.extra_json) as Partial<TranscriptMessage>);
  return {
    role: row.role as MessageRole,
    content: row.content,
    ...extra,
    timestamp: row.created_at,
    id: row.id,
    session_id: row.session_id,
  };
}
