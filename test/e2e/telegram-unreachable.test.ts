/**
 * A chat platform whose API cannot be reached at start (review): the daemon is ready at once and
 * local sessions work, `gatehouse status` shows the platform connecting and why it cannot, and once
 * the API answers again the adapter connects by itself and the chat is answered. The Telegram
 * stand-in first hangs getMe, then refuses it (HTTP 502), then answers.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { AdapterStatus } from '../../src/domain/messaging/adapter.js';
import { runCli } from './cli.js';
import { nextEvent } from './gateway-harness.js';
import { createAttached, tempDir } from './seed-fixture.js';
import { useTelegramDaemon } from './telegram-fixture.js';

const tg = useTelegramDaemon();
const DM = { id: 905, type: 'private' as const };
const ANA = { id: 905, first_name: 'Ana' };

describe('a chat platform unreachable at start', () => {
  it(
    'does not hold up the daemon; status says why; the platform connects once its API is back',
    { timeout: 180_000 },
    async () => {
      tg.standIn.failGetMe('hang');
      // Ready while getMe hangs: it used to wait for the platform before saying so.
      const daemon = await tg.start({}, { connected: false });
      await tg.standIn.waitForFailedGetMe(1);

      // Local sessions work meanwhile.
      const client = await daemon.connect();
      const session = await createAttached(client, { request_id: 'r', cwd: tempDir(), toolsets: [] });
      const done = nextEvent(client, 'turn.complete', (e) => e.session_id === session, 60_000);
      await client.call('prompt.submit', { session_id: session, submission_id: 's-1', text: 'local' });
      expect((await done).event).toMatchObject({ outcome: 'completed' });

      const status = async () => (await runCli(tg.home, ['status'], { env: tg.serveEnv() })).stdout;
      expect(await status()).toContain('telegram: connecting');

      // Refused now (the hung call's connection is reset): status names the reason.
      tg.standIn.failGetMe('refuse');
      const adapter = () =>
        (JSON.parse(readFileSync(daemon.layout.gatewayJson, 'utf8')) as { adapters: AdapterStatus[] })
          .adapters[0];
      await expect.poll(() => adapter()?.detail ?? '', { timeout: 30_000 }).toMatch(/502|Bad Gateway/);
      expect(await status()).toMatch(/telegram: connecting \(unreachable: .*(502|Bad Gateway).*\)/);

      // The API answers again: the adapter connects by itself and the chat is answered.
      tg.standIn.failGetMe(null);
      await expect.poll(() => adapter()?.state, { timeout: 60_000 }).toBe('running');
      expect(await status()).toMatch(/telegram: polling as @/);
      expect(await tg.ask(DM, ANA, 'hello again')).toMatch(/you said: hello again/);
    },
  );
});
