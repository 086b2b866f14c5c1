/**
 * Issue 12 item 9 through the real daemon: `gatehouse sessions --search` and RPC `session.search`
 * take plain text (each command exactly as docs/chat.md shows it), and the FTS5 syntax is reachable
 * with `--fts` / `syntax: "fts"`, whose refusals are invalid_params with the reason, never an
 * internal error.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS } from './gateway-harness.js';
import { runCli } from './cli.js';
import { createAttached, runTurn, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();

describe.each(BACKENDS)('plain-text search on %s', (store) => {
  beforeAll(() => {
    fx.store = store;
  });

  describe('issue 12 item 9: plain-text search', () => {
    // Eight CLI processes on a shared machine: more room than the default 30 s, no timing claim.
    it(
      'the CLI and the RPC method find plain text; --fts errors say what is wrong',
      { timeout: 120_000 },
      async () => {
        const d = await fx.daemon();
        const client = await d.connect();
        const session_id = await createAttached(client, { cwd: tempDir() });
        const said = 'please rm -rf /tmp/x now, what colour? see README.md';
        expect((await runTurn(client, session_id, 's1', said)).event).toMatchObject({ outcome: 'completed' });

        // Each command spawns the CLI: run them side by side.
        const plain = ['rm -rf', 'what colour?', '/tmp/x', 'README.md'];
        const runs = await Promise.all(plain.map((query) => runCli(d.home, ['sessions', '--search', query])));
        for (const [i, run] of runs.entries()) {
          expect(run.stderr, plain[i]).toBe('');
          expect(run.code, plain[i]).toBe(0);
          expect(run.stdout, plain[i]).toContain(session_id);
          const rpc = await client.call<{ hits: { session_id: string }[] }>('session.search', {
            query: plain[i],
          });
          expect(rpc.hits.length, plain[i]).toBeGreaterThan(0);
        }
        const star = await client.call<{ hits: unknown[] }>('session.search', { query: '*' });
        expect(star.hits).toEqual([]);
        const [starCli, prefix, phrase, refused] = await Promise.all([
          runCli(d.home, ['sessions', '--search', '*']),
          runCli(d.home, ['sessions', '--search', 'colo*', '--fts']),
          runCli(d.home, ['sessions', '--search', '"what colour"', '--fts']),
          runCli(d.home, ['sessions', '--search', 'rm -rf', '--fts']),
        ]);
        expect(starCli).toMatchObject({ code: 0, stderr: '' });
        expect(starCli.stdout).toContain('No message matches "*"');
        expect(prefix).toMatchObject({ code: 0, stderr: '' });
        expect(prefix.stdout).toContain(session_id);
        expect(phrase.stdout).toContain(session_id);
        expect(refused.code).not.toBe(0);
        expect(refused.stderr.trim()).toBe(
          'gatehouse: search query "rm -rf" is not valid FTS5 syntax (no such column: rf); leave out syntax: "fts" to search for plain words',
        );
        for (const query of ['*', 'rm -rf', 'what colour?']) {
          await expect(client.call('session.search', { query, syntax: 'fts' }), query).rejects.toMatchObject({
            reason: 'invalid_params',
          });
        }
      },
    );

    it('answers any limit the method takes, up to 500 (the store holds one page to 500 hits)', async () => {
      const d = await fx.daemon();
      const client = await d.connect();
      const session_id = await createAttached(client, { cwd: tempDir() });
      await runTurn(client, session_id, 'limits', 'the quartz heron lands');
      for (const limit of [125, 126, 500]) {
        const found = await client.call<{ hits: { session_id: string }[] }>('session.search', {
          query: 'quartz heron',
          limit,
        });
        expect(
          found.hits.map((h) => h.session_id),
          String(limit),
        ).toContain(session_id);
      }
      await expect(client.call('session.search', { query: 'quartz', limit: 501 })).rejects.toMatchObject({
        reason: 'invalid_params',
      });
    });
  });
});
