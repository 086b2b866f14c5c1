/** The sessions table's rows as both backends read them (one physical session, its lineage). */

export interface SessionRow {
  session_id: string;
  session_key: string;
  created_at: string;
  closed_at: string | null;
  closed_reason: string | null;
}

/** What recovery reads of one physical session to check a lineage step (LIN-3). */
export interface LineageRow {
  session_id: string;
  session_key: string;
  created_at: string;
  closed_at: string | null;
  closed_reason: string | null;
  parent_session_id: string | null;
  lineage_kind: string | null;
  /** Every session that names this one as its parent. */
  children: string[];
}
