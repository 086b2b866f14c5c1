/**
 * A gateway's graceful stop leaves no stdio MCP server behind. A server that answers garbage is
 * started again in the background after each failed start; one that ignores its stdin's end and
 * SIGTERM takes the SDK's whole close (2 s, SIGTERM, 2 s, SIGKILL, on timers that do not keep the
 * gateway alive) to end. The gateway stops right after such a start: the server must be gone once
 * the daemon has exited.
 */
import { readFileSync, watch, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAttached, tempDir } from './seed-fixture.js';
import { outcomeOf, pidsWith, toolResultOf, tracked, turnEvents, useMcpFixture } from './mcp-fixture.js';

const fx = useMcpFixture();
const E2E_TIMEOUT_MS = 120_000;

function lines(file: string): number {
  try {
    return readFileSync(file, 'utf8').split('\n').length - 1;
  } catch {
    return 0;
  }
}

/** Resolves once `file` holds more than `count` lines (fs.watch on its directory). */
function moreLines(file: string, count: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const watcher = watch(dirname(file));
    const check = () => {
      if (lines(file) <= count) return;
      watcher.close();
      resolve();
    };
    watcher.on('change', check);
    watcher.on('error', (error) => {
      watcher.close();
      reject(error);
    });
    check();
  });
}

describe('MCP servers when the gateway stops', () => {
  it(
    'a garbage server that ignores stdin EOF and SIGTERM, started again in the background, is gone once the daemon has stopped',
    async () => {
      const dir = tempDir();
      // Its own path is its marker; tracked only so that a failure here leaves nothing running.
      const script = tracked(join(dir, 'stubborn.js'));
      const starts = join(dir, 'starts');
      writeFileSync(
        script,
        [
          `require('node:fs').appendFileSync(${JSON.stringify(starts)}, process.pid + '\\n');`,
          "process.on('SIGTERM', () => {});",
          'process.stdin.resume();',
          "process.stdout.write('this is not json-rpc\\n');",
          'setInterval(() => {}, 1000);',
        ].join('\n'),
      );
      const config = [
        'mcp_servers:',
        '  stubborn:',
        `    command: ${process.execPath}`,
        `    args: [${script}]`,
      ];
      const d = await fx.daemon({ extraConfig: config.join('\n') });
      const client = await d.connect();
      const session = await createAttached(client, { cwd: tempDir() });
      const events = await turnEvents(client, session, 'g1', 'call: stubborn__unavailable');
      expect(outcomeOf(events)).toBe('completed');
      expect(toolResultOf(events).content).toMatch(/answered something that is not MCP/);

      // The next background start fails at once; the gateway stops while that start's close is under way.
      await moreLines(starts, lines(starts));
      fx.forget(d);
      expect(await d.stop()).toBe(0);
      expect(pidsWith(script)).toEqual([]);
    },
    E2E_TIMEOUT_MS,
  );
});
