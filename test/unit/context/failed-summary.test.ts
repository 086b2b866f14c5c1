/** A failed summary call (LIN-1): the transcript is untouched, the failure is told, and automatic compression backs off. */
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

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('a compression whose summary call fails', () => {
  it('leaves the transcript, reports the failure and backs off automatic tries with a growing cooldown', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-failed-summary-'));
    dirs.push(dir);
    const store = SqliteSessionStore.open(path.join(dir, 'state.db'));
    const { entry } = await store.getOrCreateSession('k', source());
    for (let n = 0; n < 4; n++)
      await store.appendToTranscript(entry.session_id, [
        { role: 'user', content: `message ${n}` },
        { role: 'assistant', content: `answer ${n}` },
      ]);
    const before = await store.loadTranscript(entry.session_id);
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
      settings: { window: 10_000, threshold: 0.75, tailTokens: 0 },
      events,
    };
    const first = await compressPlatformSession(deps, 'k', entry.session_id, 'threshold');
    expect(first).toEqual({
      kind: 'skipped',
      reason: 'the summary call failed: The model provider failed with HTTP 500.',
    });
    expect(await store.loadTranscript(entry.session_id)).toEqual(before);
    expect((await store.lookupBySessionId(entry.session_id))?.session_key).toBe('k');
    expect(failures).toHaveLength(1);
    const backoff = (await store.compressionBackoff('k'))!;
    expect(backoff.failures).toBe(1);

    // An automatic try during the cooldown does not call the model; a manual one does, and the cooldown grows.
    const cooling = await compressPlatformSession(deps, 'k', entry.session_id, 'threshold');
    expect(cooling.kind === 'skipped' && cooling.reason).toContain('the next try is after');
    expect(calls).toBe(1);
    await compressPlatformSession(deps, 'k', entry.session_id, 'manual');
    expect(calls).toBe(2);
    const grown = (await store.compressionBackoff('k'))!;
    expect(grown.failures).toBe(2);
    expect(Date.parse(grown.retryAfter)).toBeGreaterThan(Date.parse(backoff.retryAfter));
    await store.close();

    // The cooldown is in the store: after a restart an automatic try still waits for it.
    const reopened = SqliteSessionStore.open(path.join(dir, 'state.db'));
    expect(await reopened.compressionBackoff('k')).toEqual(grown);
    const afterRestart = await compressPlatformSession(
      { ...deps, store: reopened },
      'k',
      entry.session_id,
      'threshold',
    );
    expect(afterRestart.kind === 'skipped' && afterRestart.reason).toContain('the next try is after');
    expect(calls).toBe(2);
    await reopened.close();
  });
});
