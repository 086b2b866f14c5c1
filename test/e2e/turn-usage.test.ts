/**
 * Issue 26 item 11 for local sessions, through the real daemon: a turn's route records the prompt
 * size of its last model call (`last_prompt_tokens`), which used to stay 0. The chat-platform side
 * (failed and interrupted turns counted) is test/unit/messaging/turn-usage.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createAttached, runTurn, tempDir, useFixture } from './seed-fixture.js';
import { storeRows } from './store-rows.js';

const fx = useFixture();

describe('local turn usage', () => {
  it('last_prompt_tokens holds the provider-counted prompt of the last model call', async () => {
    const d = await fx.daemon();
    const client = await d.connect();
    const session_id = await createAttached(client, { cwd: tempDir() });
    const done = await runTurn(client, session_id, 's1', 'count me');
    expect(done.event).toMatchObject({ outcome: 'completed' });
    const prompted = (done.event as unknown as { usage: { input_tokens: number } }).usage.input_tokens;
    await d.stop();
    fx.forget(d);
    const rows = await storeRows(d, 'sqlite');
    const [route] = await rows.all<{ input_tokens: number; last_prompt_tokens: number }>(
      'SELECT input_tokens, last_prompt_tokens FROM routes',
    );
    await rows.close();
    expect(prompted).toBeGreaterThan(0);
    // One model call: its prompt is the turn's input tokens and the last prompt alike.
    expect(route).toEqual({ input_tokens: prompted, last_prompt_tokens: prompted });
  }, 120_000);
});
