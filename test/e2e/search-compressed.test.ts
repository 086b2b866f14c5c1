/**
 * Issue 26 item 2 through the real daemon: every compression copies the first exchange (and the
 * recent tail) into the child transcript, where it is indexed again. A logical session's message
 * is still found once — by `gatehouse sessions --search`, RPC `session.search`, and the dashboard
 * (which calls the same method over its own ticket).
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startDemoModel } from '../../src/runtime/demo/server.js';
import { requireBuild, runCli } from './cli.js';
import { BACKENDS, dropTestSchemas, nextEvent, startDaemon, type Backend } from './gateway-harness.js';
import { createAttached, dashboardClient, dashboardConfig, runTurn, tempDir } from './seed-fixture.js';

beforeAll(requireBuild);
const closers: (() => Promise<unknown>)[] = [];
let backend: Backend = 'sqlite';
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await dropTestSchemas();
});

type Hits = { hits: { session_id: string; role: string; snippet: string }[] };

describe.each(BACKENDS)('search after compressions on %s', (store) => {
  beforeAll(() => {
    backend = store;
  });

  it(
    'finds a message of the first exchange once, however many compressions copied it',
    { timeout: 300_000 },
    async () => {
      const demo = await startDemoModel({ contextWindow: 2048 });
      closers.push(() => demo.close());
      const config = [
        'model:',
        `  base_url: ${demo.baseUrl}`,
        '  model: gatehouse-demo',
        '  context_window: 2048',
        'compression:',
        '  threshold: 0.75',
        '  tail_tokens: 200',
        await dashboardConfig(),
      ].join('\n');
      const daemon = await startDaemon({ store: backend, config });
      closers.push(() => daemon.stop());
      const client = await daemon.connect();
      const session = await createAttached(client, { request_id: 'r-1', cwd: tempDir(), toolsets: [] });
      const padding = 'lorem ipsum dolor sit amet '.repeat(12);
      let compressions = 0;
      const counting = (): void => {
        void nextEvent(client, 'session.compressed', (e) => e.session_id === session, 300_000).then(
          () => {
            compressions++;
            counting();
          },
          () => undefined,
        );
      };
      counting();
      expect((await runTurn(client, session, 's-1', `zanzibar is the goal: ${padding}`)).event).toMatchObject(
        {
          outcome: 'completed',
        },
      );
      for (let n = 2; n <= 40; n++)
        expect((await runTurn(client, session, `s-${n}`, `message ${n}: ${padding}`)).event).toMatchObject({
          outcome: 'completed',
        });
      expect(compressions).toBeGreaterThan(2);

      // The question and the model's echo of it: one hit each.
      const rpc = await client.call<Hits>('session.search', { query: 'zanzibar' });
      expect(rpc.hits.map((h) => [h.session_id, h.role]).sort()).toEqual([
        [session, 'assistant'],
        [session, 'user'],
      ]);
      const dashboard = await dashboardClient(daemon.url);
      closers.push(() => dashboard.close());
      expect((await dashboard.call<Hits>('session.search', { query: 'zanzibar' })).hits).toHaveLength(2);
      const cli = await runCli(daemon.home, ['sessions', '--search', 'zanzibar']);
      expect(cli).toMatchObject({ code: 0, stderr: '' });
      expect(cli.stdout.trim().split('\n')).toHaveLength(2);
    },
  );
});
