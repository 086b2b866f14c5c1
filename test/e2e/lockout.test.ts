/**
 * Nobody locked in or out (issue 25, item 8), through the real daemon: a tool whose spawn meets a
 * full descriptor table fails alone and the daemon lives on.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { FAULT_ENV } from '../../src/daemon/faults.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { nextEvent } from './gateway-harness.js';
import { chatRequests, createAttached, lastToolResult, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();
const E2E_TIMEOUT_MS = 120_000;

async function run(client: GatewayClient, sessionId: string, id: string, command: string): Promise<string> {
  const done = nextEvent(client, 'turn.complete', (e) => e.session_id === sessionId, 60_000);
  await client.call('prompt.submit', { session_id: sessionId, submission_id: id, text: `run: ${command}` });
  expect((await done).event['outcome']).toBe('completed');
  return lastToolResult(chatRequests(fx.demo).at(-1)!);
}

describe('a spawn failure fails the tool call, never the daemon (issue 25, item 8)', () => {
  beforeAll(() => {
    fx.store = 'sqlite';
  });

  it(
    'EMFILE at a terminal spawn: the call reports it, the daemon answers and the next command runs',
    async () => {
      const d = await fx.daemon({ env: { ...process.env, [FAULT_ENV]: 'tool.emfile' } });
      const client = await d.connect();
      const session = await createAttached(client, { cwd: tempDir(), yolo: true });
      const failed = await run(client, session, 'full', 'echo should-not-run');
      expect(failed).toMatch(/could not start bash: .*EMFILE/);
      expect(failed).not.toContain('should-not-run\n');
      expect(await run(client, session, 'after', 'echo ran-after')).toContain('ran-after');
      expect(d.child.exitCode).toBeNull();
      const health = (await fetch(`${d.url}/healthz`).then((r) => r.json())) as { state: string };
      expect(health.state).toBe('ready');
    },
    E2E_TIMEOUT_MS,
  );
});
