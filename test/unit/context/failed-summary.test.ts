/**
 * A failed summary call (LIN-1, issue 26 item 1): the oldest exchanges are dropped instead, the failure
 * is told, and summary tries back off; a history larger than the window is summarised in pieces.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TypedEmitter } from '../../../src/domain/events/typed-emitter.js';
import { ModelError } from '../../../src/runtime/model/errors.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { compressPlatformSession } from '../../../src/domain/messaging/compression.js';
import type { MessagingEvents } from '../../../src/domain/messaging/events.js';
import { source } from '../../shared/fixtures.js';
import { DROPPED_NOTE, SUMMARY_MARKER } from '../../../src/runtime/context/compress.js';
import { prepareCompression } from '../../../src/runtime/context/prepare.js';
import { countRequestTokens } from '../../../src/runtime/context/tokens.js';
import { ZERO_USAGE, type WireMessage } from '../../../src/runtime/model/wire.js';
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('a compression whose summary call fails', () => {
  it('drops the oldest exchanges instead, reports the failure and backs off summary tries with a growing cooldown', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-failed-summary-'));
    dirs.push(dir);
    const store = SqliteSessionStore.open(path.join(dir, 'state.db'));
    const { entry } = await store.getOrCreateSession('k', source());
    for (let n = 0; n < 8; n++)
      await store.appendToTranscript(entry.session_id, [
        { role: 'user', content: `message ${n}` },
        { role: 'assistant', content: `answer ${n}` },
      ]);
    const events = new TypedEmitter<MessagingEvents>();
    const failures: MessagingEvents['compression:failed'][] = [];
    events.on('compression:failed', (e) => failures.push(e));
    let calls = 0;
    const deps = {
      store,
      model: {
        complete: () => {
          calls++;
          return Promise.reject(new ModelError('server', 'The model provider failed with HTTP 500.'));
        },
      },
      modelName: undefined,
      // A budget (0.75 × 0.8 × 400 = 240 tokens) that holds only part of the conversation.
      settings: { window: 400, threshold: 0.75, tailTokens: 0 },
      events,
    };
    const first = await compressPlatformSession(deps, 'k', entry.session_id, 'threshold');
    if (first.kind !== 'compressed') throw new Error(`not compressed: ${first.reason}`);
    const note = first.messages.find((m) =>
      (m.content ?? '').startsWith(`${SUMMARY_MARKER} ${DROPPED_NOTE}`),
    );
    expect(note?.content).toContain('the summary call failed: The model provider failed with HTTP 500.');
    expect(first.messages[0]).toMatchObject({ role: 'user', content: 'message 0' }); // the goal stays
    expect(first.messages.at(-1)).toMatchObject({ content: 'answer 7' }); // the tail stays
    expect(first.messages.some((m) => m.content === 'message 1')).toBe(false); // the oldest went
    expect(failures).toHaveLength(1);
    const backoff = (await store.compressionBackoff('k'))!;
    expect(backoff.failures).toBe(1);

    // An automatic try during the cooldown drops without calling the model; a manual one calls it,
    // and the cooldown grows.
    await store.appendToTranscript(first.sessionId, [
      { role: 'user', content: `message 8 ${'word '.repeat(60)}` },
      { role: 'assistant', content: 'answer 8' },
      { role: 'user', content: 'message 9' },
      { role: 'assistant', content: 'answer 9' },
    ]);
    const cooling = await compressPlatformSession(deps, 'k', first.sessionId, 'threshold');
    expect(cooling.kind).toBe('compressed');
    expect(calls).toBe(1);
    expect(failures).toHaveLength(1);
    const current = cooling.kind === 'compressed' ? cooling.sessionId : first.sessionId;
    await store.appendToTranscript(current, [
      { role: 'user', content: 'message 10' },
      { role: 'assistant', content: 'answer 10' },
      { role: 'user', content: 'message 11' },
      { role: 'assistant', content: 'answer 11' },
    ]);
    await compressPlatformSession(deps, 'k', current, 'manual');
    expect(calls).toBe(2);
    const grown = (await store.compressionBackoff('k'))!;
    expect(grown.failures).toBe(2);
    expect(Date.parse(grown.retryAfter)).toBeGreaterThan(Date.parse(backoff.retryAfter));
    await store.close();

    // The cooldown is in the store: after a restart it is still there.
    const reopened = SqliteSessionStore.open(path.join(dir, 'state.db'));
    expect(await reopened.compressionBackoff('k')).toEqual(grown);
    await reopened.close();
  });

  it('summarises a history larger than the window in pieces, each request inside the window', async () => {
    const messages: TranscriptMessage[] = [];
    for (let n = 0; n < 60; n++)
      messages.push(
        { role: 'user', content: `message ${n}: ${'lorem ipsum dolor '.repeat(20)}` },
        { role: 'assistant', content: `answer ${n}` },
      );
    const sizes: number[] = [];
    const model = {
      complete: (request: { messages: WireMessage[] }) => {
        sizes.push(countRequestTokens(request.messages));
        return Promise.resolve({
          text: `- summary ${sizes.length}`,
          reasoning: null,
          toolCalls: [],
          finishReason: 'stop',
          usage: ZERO_USAGE,
          model: 'm',
          attempts: 1,
        });
      },
    };
    const settings = { window: 2000, threshold: 0.75, tailTokens: 100 };
    const prepared = await prepareCompression({ messages, model, settings });
    expect(sizes.length).toBeGreaterThan(1);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(settings.window);
    expect(prepared).toMatchObject({ kind: 'ready', method: 'summary' });
  });
});
