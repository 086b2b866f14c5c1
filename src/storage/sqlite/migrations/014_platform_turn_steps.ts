/**
 * 014: the step boundaries of a chat-platform turn (REC-7 for platforms), on its in-flight marker.
 *
 * - `turn_id`: the turn the marker belongs to (its input carries it as `admission_id`), so recovery
 *   finds the turn's stored messages and step writes are fenced to that turn.
 * - `tool_started`: the tool call whose execution was marked started (durably, before its process
 *   was spawned) and whose result is not stored yet; cleared with the result, in one commit.
 * - `prompt_json`: the approval or clarify prompt the turn waits on (prompt id, kind, tool call,
 *   original request time), so recovery re-sends it with the same id and timeout.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 14,
  name: 'platform_turn_steps',
  up(db) {
    db.exec(`
      ALTER TABLE turn_markers ADD COLUMN turn_id TEXT;
      ALTER TABLE turn_markers ADD COLUMN tool_started TEXT;
      ALTER TABLE turn_markers ADD COLUMN prompt_json TEXT;
    `);
  },
};
