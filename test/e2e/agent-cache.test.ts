/**
 * The agent cache through the real daemon (AGC-1, issue 11): a second turn of a session is a hit,
 * runtime.describe counts it, and run/gateway.json (what `gatehouse status` prints) carries the
 * counters once a housekeeping pass ran.
 */
import { mkdtempSync, readFileSync, watch } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import { requireBuild } from './cli.js';
import {
  BACKENDS,
  dropTestSchemas,
  nextEvent,
  startDaemon,
  type Backend,
  type RunningDaemon,
} from './gateway-harness.js';

beforeAll(requireBuild);

const running: RunningDaemon[] = [];
/** The store of the daemons this file starts; each describe.each(BACKENDS) block sets it. */
let backend: Backend = 'sqlite';
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  await dropTestSchemas();
});

/** Resolves once `ready()` holds, checked now and at every change of the file's directory. */
function whenRewritten(file: string, ready: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const watcher = watch(dirname(file), () => {
      if (!ready()) return;
      watcher.close();
      resolve();
    });
    if (ready()) {
      watcher.close();
      resolve();
    }
  });
}

type Counters = { size: number; hits: number; misses: number; evictions: Record<string, number> };

describe.each(BACKENDS)('the agent cache on %s', (store) => {
  beforeAll(() => {
    backend = store;
  });

  describe('AGC-1 the agent cache in the daemon', () => {
    it('keeps the agent between turns and says so in runtime.describe and gateway.json', async () => {
      const home = join(mkdtempSync(join(tmpdir(), 'gh-agents-')), 'home');
      const d = await startDaemon({ store: backend, home, config: 'housekeeping:\n  interval_s: 1\n' });
      running.push(d);
      const client = await d.connect();
      const { session_id } = await client.call<{ session_id: string }>('session.create', {
        cwd: mkdtempSync(join(tmpdir(), 'gh-work-')),
      });
      await client.call('session.resume', { session_id });
      for (const [i, text] of ['one', 'two'].entries()) {
        const done = nextEvent(client, 'turn.complete');
        await client.call('prompt.submit', { session_id, submission_id: `s${i}`, text });
        expect((await done).event).toMatchObject({ outcome: 'completed' });
      }
      const described = await client.call<{ agent_cache: Counters }>('runtime.describe', {});
      expect(described.agent_cache).toMatchObject({ size: 1, misses: 1, hits: 1 });
      expect(described.agent_cache.evictions).toEqual({ ttl: 0, pressure: 0, lru: 0, invalidated: 0 });
      // The next housekeeping pass (every second here) republishes the counters for `gatehouse status`.
      const published = (): Counters | undefined =>
        (JSON.parse(readFileSync(homeLayout(home).gatewayJson, 'utf8')) as { agent_cache?: Counters })
          .agent_cache;
      await whenRewritten(homeLayout(home).gatewayJson, () => published()?.hits === 1);
      expect(published()).toMatchObject({ size: 1, misses: 1, hits: 1 });
    });
  });
});
