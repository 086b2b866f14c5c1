/** The turn_markers table's rows as both backends read them: in-flight turns and their steps. */

/** A marker as the recovery sweep lists it. */
export interface TurnMarker {
  session_key: string;
  session_id: string;
  started_at_epoch: number;
}

/** The steps a marker records (014); writes are fenced to the marker's turn. */
export interface TurnStepRow {
  session_key: string;
  session_id: string;
  started_at: string;
  turn_id: string;
  tool_started: string | null;
  prompt_json: string | null;
}
