/**
 * What a chat turn's in-flight marker records of its open prompt (REC-7), read from the daemon's
 * state database while it runs. The daemon learns the id of the message that shows a prompt only
 * when the platform answers the send, and records it then: a test that kills the daemon to see that
 * message replaced after the restart first waits until the id is durable.
 */
import Database from 'better-sqlite3';
import { expect, vi } from 'vitest';

export async function waitForShownPrompt(stateDb: string): Promise<void> {
  await vi.waitFor(
    () => {
      const db = new Database(stateDb, { readonly: true });
      try {
        const rows = db.prepare('SELECT prompt_json FROM turn_markers').all() as {
          prompt_json: string | null;
        }[];
        expect(rows.some((r) => r.prompt_json?.includes('"message_id"'))).toBe(true);
      } finally {
        db.close();
      }
    },
    { timeout: 30_000, interval: 50 },
  );
}
