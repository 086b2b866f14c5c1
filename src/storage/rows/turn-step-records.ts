/** The step records of resumed chat turns (REC-7), from marker rows: shared by both backends. */
import type { PlatformPrompt, TurnStepRecord } from '../../domain/ports/delivery-ledger.js';
import type { TurnStepRow } from './turn-markers.js';

/** The record of each resumed key whose marker named its turn, with its restart streak. */
export function resumedStepRecords(
  rows: readonly TurnStepRow[],
  resumed: readonly string[],
  streaks: ReadonlyMap<string, number>,
): Record<string, TurnStepRecord> {
  const records: Record<string, TurnStepRecord> = {};
  for (const row of rows) {
    if (!resumed.includes(row.session_key)) continue;
    records[row.session_key] = {
      turnId: row.turn_id,
      sessionId: row.session_id,
      startedAt: row.started_at,
      toolStarted: row.tool_started,
      prompt: row.prompt_json === null ? null : (JSON.parse(row.prompt_json) as PlatformPrompt),
      resumes: streaks.get(row.session_key) ?? 1,
    };
  }
  return records;
}
