/**
 * Issue 26 item 14: one answer far over the viewer's 4 MiB buffer bound — `session.history` of a
 * 100,000-message session — reaches the client that asked for it, which stays connected (it used to
 * be dropped as a slow consumer, `connection.dropped`, before the answer was sent). The messages
 * are written into the stopped daemon's SQLite file, as a long-lived session would have left them.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createAttached, runTurn, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();
const PLANTED = 100_000;

describe('a reply larger than the viewer buffer bound', () => {
  it('session.history of a 100,000-message session is read whole, and the client stays connected', async () => {
    const first = await fx.daemon();
    const client = await first.connect();
    const session_id = await createAttached(client, { cwd: tempDir() });
    await runTurn(client, session_id, 's1', 'the first of many');
    await first.stop();
    fx.forget(first);

    const db = new Database(first.layout.stateDb('default'));
    const physical = db
      .prepare('SELECT session_id FROM routes WHERE session_key LIKE ?')
      .pluck()
      .get(`%${session_id}`) as string;
    const insert = db.prepare(
      'INSERT INTO messages (session_id, role, content, created_at) VALUES (?, ?, ?, ?)',
    );
    const at = new Date().toISOString();
    db.transaction(() => {
      for (let i = 0; i < PLANTED; i++)
        insert.run(physical, i % 2 === 0 ? 'user' : 'assistant', `planted message number ${i}`, at);
    })();
    db.close();

    const second = await fx.daemon({ home: first.home });
    const reader = await second.connect();
    const dropped: unknown[] = [];
    reader.onNotification((n) => {
      if (n.method === 'connection.dropped') dropped.push(n);
    });
    const history = await reader.call<{ messages: { content: string | null }[] }>('session.history', {
      session_id,
    });
    // The first turn's question and answer, then everything planted.
    expect(history.messages).toHaveLength(2 + PLANTED);
    expect(history.messages.at(-1)!.content).toBe(`planted message number ${PLANTED - 1}`);
    expect(JSON.stringify(history).length).toBeGreaterThan(4 * 1024 * 1024);
    expect(await reader.call('ping', {})).toEqual({ pong: true });
    expect(dropped).toEqual([]);
  }, 180_000);
});
