/**
 * Start-up and memory of the daemon (issue 4):
 *
 * - time from spawning `gatehouse serve` on an empty home to its ready line on stdout (printed after
 *   gateway.json is written), against spawning `node -e ''` to its exit;
 * - idle RSS after start, against an idle bare `node` process;
 * - RSS with many live sessions, each attached by a viewer (a handful of connections, each resuming
 *   many sessions), as KiB per live session above the idle daemon: aim under 30 KB.
 *
 * RSS is VmRSS from /proc/<pid>/status (Linux).
 */
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  bareNodeRssKiB,
  createSessions,
  nodeSpawnMs,
  rssKiB,
  startBenchDaemon,
  tempDir,
} from './gateway-daemon.js';
import { figure, percentile, type Bench } from './lib.js';

const bench: Bench = {
  name: 'gateway-footprint',
  async run({ quick }) {
    const starts = quick ? 2 : 7;
    const readyMs: number[] = [];
    const nodeMs: number[] = [];
    for (let i = 0; i < starts; i++) {
      nodeMs.push(await nodeSpawnMs());
      const d = await startBenchDaemon();
      readyMs.push(d.readyMs);
      await d.close();
    }
    readyMs.sort((a, b) => a - b);
    nodeMs.sort((a, b) => a - b);

    const live = quick ? 300 : 10_000;
    const bare = await bareNodeRssKiB();
    const daemon = await startBenchDaemon();
    const cwd = tempDir('gh-bench-cwd-');
    try {
      // Let start-up garbage settle a moment before reading the idle figure.
      await sleep(500);
      const idle = rssKiB(daemon.pid);
      const viewers = await Promise.all(Array.from({ length: 4 }, () => daemon.connect()));
      const ids = await createSessions(viewers, live, cwd);
      let next = 0;
      // Sessions are spread round robin over the viewer connections; each connection resumes its share.
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < ids.length) {
            const i = next++;
            await viewers[i % viewers.length]!.call('session.resume', { session_id: ids[i] });
          }
        }),
      );
      await sleep(500);
      const loaded = rssKiB(daemon.pid);
      const perSessionKiB = (loaded - idle) / live;
      return [
        figure({
          bench: 'gateway',
          name: 'serve → ready, empty home (median)',
          value: percentile(readyMs, 50),
          unit: 'ms',
          baseline: { name: "node -e '' spawn→exit (median)", value: percentile(nodeMs, 50) },
          higherIsBetter: false,
          extra: { starts },
        }),
        figure({
          bench: 'gateway',
          name: 'idle daemon RSS',
          value: idle / 1024,
          unit: 'MiB',
          baseline: { name: 'idle bare node RSS', value: bare / 1024 },
          higherIsBetter: false,
        }),
        figure({
          bench: 'gateway',
          name: `RSS per live viewed session (${live})`,
          value: perSessionKiB,
          unit: 'KiB',
          baseline: { name: 'budget per session (KiB)', value: 30 },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 1 },
          extra: { idle_kib: idle, loaded_kib: loaded, sessions: live },
        }),
      ];
    } finally {
      await daemon.close();
      rmSync(cwd, { recursive: true, force: true });
    }
  },
};

export default bench;
