/**
 * What a chat turn's in-flight marker records of its open prompt (REC-7), read from the daemon's
 * state database while it runs (its SQLite file, or its PostgreSQL schema). The daemon learns the id
 * of the message that shows a prompt only when the platform answers the send, and records it then: a
 * test that kills the daemon to see that message replaced after the restart first waits until the id
 * is durable.
 */
import Database from 'better-sqlite3';
import { expect, vi } from 'vitest';
import { inSchema } from '../shared/postgres.js';
import { testSchemaOf, type RunningDaemon } from './gateway-harness.js';

type MarkerRow = { prompt_json: string | null };
const SELECT = 'SELECT prompt_json FROM turn_markers';

async function markerRows(daemon: RunningDaemon): Promise<MarkerRow[]> {
  const schema = testSchemaOf(daemon.home);
  if (schema !== undefined)
    return inSchema(schema.name, async (c) => (await c.query<MarkerRow>(SELECT)).rows);
  const db = new Database(daemon.layout.stateDb('default'), { readonly: true });
  try {
    return db.prepare(SELECT).all() as MarkerRow[];
  } finally {
    db.close();
  }
}

export async function waitForShownPrompt(daemon: RunningDaemon): Promise<void> {
  await vi.waitFor(
    async () => {
      const rows = await markerRows(daemon);
      expect(rows.some((r) => r.prompt_json?.includes('"message_id"'))).toBe(true);
    },
    { timeout: 30_000, interval: 50 },
  );
}
