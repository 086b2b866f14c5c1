/** The routes table row and its mapping to and from SessionEntry (booleans are 0/1, origin is JSON). */
import type { ChatType, ResumeReason, SessionEntry, SessionSourceFields } from '../../domain/vocabulary.js';

export interface RouteRow {
  session_key: string;
  session_id: string;
  created_at: string;
  updated_at: string;
  origin_json: string | null;
  display_name: string | null;
  platform: string | null;
  chat_type: string;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  total_tokens: number;
  last_prompt_tokens: number;
  estimated_cost_usd: number;
  cost_status: string;
  was_auto_reset: number;
  auto_reset_reason: string | null;
  reset_had_activity: number;
  is_fresh_reset: number;
  expiry_finalized: number;
  suspended: number;
  resume_pending: number;
  resume_reason: string | null;
  last_resume_marked_at: string | null;
}

export const ROUTE_COLUMNS = [
  'session_key',
  'session_id',
  'created_at',
  'updated_at',
  'origin_json',
  'display_name',
  'platform',
  'chat_type',
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'total_tokens',
  'last_prompt_tokens',
  'estimated_cost_usd',
  'cost_status',
  'was_auto_reset',
  'auto_reset_reason',
  'reset_had_activity',
  'is_fresh_reset',
  'expiry_finalized',
  'suspended',
  'resume_pending',
  'resume_reason',
  'last_resume_marked_at',
] as const satisfies readonly (keyof RouteRow)[];

export function entryFromRow(row: RouteRow): SessionEntry {
  return {
    session_key: row.session_key,
    session_id: row.session_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
    origin: row.origin_json === null ? null : (JSON.parse(row.origin_json) as SessionSourceFields),
    display_name: row.display_name,
    platform: row.platform,
    chat_type: row.chat_type as ChatType,
    input_tokens: row.input_tokens,
    output_tokens: row.output_tokens,
    cache_read_tokens: row.cache_read_tokens,
    cache_write_tokens: row.cache_write_tokens,
    total_tokens: row.total_tokens,
    last_prompt_tokens: row.last_prompt_tokens,
    estimated_cost_usd: row.estimated_cost_usd,
    cost_status: row.cost_status,
    was_auto_reset: row.was_auto_reset === 1,
    auto_reset_reason: row.auto_reset_reason,
    reset_had_activity: row.reset_had_activity === 1,
    is_fresh_reset: row.is_fresh_reset === 1,
    expiry_finalized: row.expiry_finalized === 1,
    suspended: row.suspended === 1,
    resume_pending: row.resume_pending === 1,
    resume_reason: row.resume_reason as ResumeReason | null,
    last_resume_marked_at: row.last_resume_marked_at,
  };
}

export function rowFromEntry(entry: SessionEntry): RouteRow {
  return {
    ...entry,
    origin_json: entry.origin === null ? null : JSON.stringify(entry.origin),
    platform: entry.platform,
    was_auto_reset: entry.was_auto_reset ? 1 : 0,
    reset_had_activity: entry.reset_had_activity ? 1 : 0,
    is_fresh_reset: entry.is_fresh_reset ? 1 : 0,
    expiry_finalized: entry.expiry_finalized ? 1 : 0,
    suspended: entry.suspended ? 1 : 0,
    resume_pending: entry.resume_pending ? 1 : 0,
  };
}
