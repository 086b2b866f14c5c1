/**
 * Issue 12 item 3 through the real daemon: a command whose program is computed when it runs
 * (`$(echo rm) -rf DIR`) raises an approval like any other danger, and a denial leaves DIR intact.
 * Before opaque.ts the detector saw a harmless head and bash deleted the directory unasked.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, nextEvent } from './gateway-harness.js';
import { createAttached, lastToolResult, chatRequests, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();

describe.each(BACKENDS)('opaque commands on %s', (store) => {
  beforeAll(() => {
    fx.store = store;
  });

  describe('issue 12 item 3: opaque commands ask through the real daemon', () => {
    it('`run: $(echo rm) -rf DIR` raises an approval; deny leaves DIR intact', async () => {
      const d = await fx.daemon();
      const client = await d.connect();
      const cwd = tempDir();
      const victim = join(cwd, 'victim');
      mkdirSync(victim);
      writeFileSync(join(victim, 'file.txt'), 'precious');
      const session_id = await createAttached(client, { cwd });

      const asked = nextEvent(client, 'approval.request');
      await client.call('prompt.submit', {
        session_id,
        submission_id: 'opaque',
        text: `run: $(echo rm) -rf ${victim}`,
      });
      const request = (await asked).event;
      expect(request['command']).toBe(`$(echo rm) -rf ${victim}`);
      expect(String(request['reason'])).toMatch(/computed when the command runs/);
      expect(existsSync(join(victim, 'file.txt'))).toBe(true);

      const done = nextEvent(client, 'turn.complete');
      await expect(
        client.call('approval.respond', {
          session_id,
          prompt_id: request['prompt_id'],
          execution_generation: request['execution_generation'],
          choice: 'deny',
        }),
      ).resolves.toMatchObject({ status: 'resolved' });
      expect((await done).event).toMatchObject({ outcome: 'completed' });
      expect(existsSync(join(victim, 'file.txt'))).toBe(true);
      expect(lastToolResult(chatRequests(fx.demo)[1]!)).toMatch(/denied/i);
    });
  });
});
