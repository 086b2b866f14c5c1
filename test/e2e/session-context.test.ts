/**
 * Issue 31 items 3 and 12 through the real daemon, on SQLite and PostgreSQL: `session.context`
 * counts the session's next request as the turn's budget check does — the very request the model
 * received last, plus the answer it gave — against the window and `compression.threshold`; and
 * `session.info` names the instruction files the session's frozen prompt was read from.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { countMessageTokens, countRequestTokens } from '../../src/runtime/context/tokens.js';
import type { WireMessage } from '../../src/runtime/model/wire.js';
import { BACKENDS } from './gateway-harness.js';
import { chatRequests, createAttached, runTurn, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();
const said = (text: string) => `Demo model (scripted stand-in): you said: ${text}`;

describe.each(BACKENDS)('the context meter and instruction files on %s', (store) => {
  beforeAll(() => {
    fx.store = store;
  });

  it(
    'counts the next request as the turn does, and names the files the prompt holds',
    {
      timeout: 60_000,
    },
    async () => {
      const d = await fx.daemon({ extraConfig: '  context_window: 20000\ncompression:\n  threshold: 0.6\n' });
      const client = await d.connect();
      const cwd = tempDir();
      writeFileSync(join(cwd, 'AGENTS.md'), 'Keep answers short.\n');
      writeFileSync(join(d.layout.root, 'AGENTS.md'), 'Call me Sam.\n');
      const sessionId = await createAttached(client, { cwd });
      expect(await client.call('session.info', { session_id: sessionId })).toMatchObject({
        instruction_files: { rules: [join(cwd, 'AGENTS.md')], personal: join(d.layout.root, 'AGENTS.md') },
      });
      const bare = await createAttached(client, { cwd: tempDir(), ignore_user_config: true });
      expect(await client.call('session.info', { session_id: bare })).toMatchObject({
        instruction_files: { rules: [], personal: null },
      });

      await runTurn(client, sessionId, 's1', 'tomatoes');
      await runTurn(client, sessionId, 's2', 'beans');
      const asked = chatRequests(fx.demo).at(-1)!;
      const tokens =
        countRequestTokens(asked.messages as WireMessage[], asked.tools ?? []) +
        countMessageTokens({ role: 'assistant', content: said('beans') });
      expect(await client.call('session.context', { session_id: sessionId })).toEqual({
        session_id: sessionId,
        window: 20000,
        threshold: 0.6,
        compress_at: 12000,
        tokens,
        used: tokens / 20000,
        until_compression: 12000 - tokens,
        compression_due: false,
        messages: 4,
      });
    },
  );
});
