/**
 * 010: the step boundaries of a running turn (REC-7), on its admission row.
 *
 * - `resumes`: how many times recovery resumed this turn after a crash (consecutive: a turn that
 *   settles is never resumed again), for `recovery.max_resumes`.
 * - `tool_started`: the tool call whose execution was marked started (durably, before its process
 *   was spawned) and whose result is not stored yet; cleared in the transaction that stores the
 *   result. Set at a crash, the tool was running: its effect is unknown and it is never run again.
 * - `prompt_json`: the approval or clarify prompt the turn is waiting on (prompt id, kind, tool
 *   call, original request time), so recovery recreates it with the same id and timeout.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 10,
  name: 'turn_steps',
  up(db) {
    db.exec(`
      ALTER TABLE admissions ADD COLUMN resumes INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE admissions ADD COLUMN tool_started TEXT;
      ALTER TABLE admissions ADD COLUMN prompt_json TEXT;
    `);
  },
};
