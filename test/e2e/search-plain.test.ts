/**
 * Issue 12 item 9 through the real daemon: `gatehouse sessions --search` and RPC `session.search`
 * take plain text (each command exactly as docs/chat.md shows it), and the FTS5 syntax is reachable
 * with `--fts` / `syntax: "fts"`, whose refusals are invalid_params with the reason, never an
 * internal error.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { createAttached, runTurn, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();

describe('issue 12 item 9: plain-text search', () => {
  it('the CLI and the RPC method find plain text; --fts errors say what is wrong', async () => {
    const d = await fx.daemon();
    const client = await d.connect();
    const session_id = await createAttached(client, { cwd: tempDir() });
    const said = 'please rm -rf /tmp/x now, what colour? see README.md';
    expect((await runTurn(client, session_id, 's1', said)).event).toMatchObject({ outcome: 'completed' });

    for (const query of ['rm -rf', 'what colour?', '/tmp/x', 'README.md']) {
      const run = await runCli(d.home, ['sessions', '--search', query]);
      expect(run.stderr, query).toBe('');
      expect(run.code, query).toBe(0);
      expect(run.stdout, query).toContain(session_id);
      const rpc = await client.call<{ hits: { session_id: string }[] }>('session.search', { query });
      expect(rpc.hits.length, query).toBeGreaterThan(0);
    }
    const star = await client.call<{ hits: unknown[] }>('session.search', { query: '*' });
    expect(star.hits).toEqual([]);
    const starCli = await runCli(d.home, ['sessions', '--search', '*']);
    expect(starCli).toMatchObject({ code: 0, stderr: '' });
    expect(starCli.stdout).toContain('No message matches "*"');

    const prefix = await runCli(d.home, ['sessions', '--search', 'colo*', '--fts']);
    expect(prefix).toMatchObject({ code: 0, stderr: '' });
    expect(prefix.stdout).toContain(session_id);
    const phrase = await runCli(d.home, ['sessions', '--search', '"what colour"', '--fts']);
    expect(phrase.stdout).toContain(session_id);

    const refused = await runCli(d.home, ['sessions', '--search', 'rm -rf', '--fts']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr.trim()).toBe(
      'gatehouse: search query "rm -rf" is not valid FTS5 syntax (no such column: rf); leave out syntax: "fts" to search for plain words',
    );
    for (const query of ['*', 'rm -rf', 'what colour?']) {
      await expect(client.call('session.search', { query, syntax: 'fts' }), query).rejects.toMatchObject({
        reason: 'invalid_params',
      });
    }
  });
});
