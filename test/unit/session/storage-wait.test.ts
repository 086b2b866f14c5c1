/** The shared wait for a store that cannot be written (issue 26 item 5), both engines use it. */
import { describe, expect, it } from 'vitest';
import { StorageUnavailableError } from '../../../src/domain/errors.js';
import { storageRetryMs, whenStored } from '../../../src/domain/session/storage-wait.js';

const full = () => new StorageUnavailableError('state.db', 'the disk is full (SQLITE_FULL)');

/** A write refused `refusals` times, then stored; counts its attempts. */
function flaky(refusals: number) {
  const state = { attempts: 0 };
  const write = () => {
    state.attempts++;
    return state.attempts <= refusals ? Promise.reject(full()) : Promise.resolve('stored');
  };
  return { state, write };
}

describe('whenStored', () => {
  it('tries the same write again after each refusal, and tells each wait and the way back', async () => {
    const { state, write } = flaky(2);
    const told: string[] = [];
    const value = await whenStored(write, {
      waiting: (error, attempt, retryInMs) => told.push(`waiting ${attempt} ${retryInMs} ${error}`),
      back: () => told.push('back'),
    });
    expect(value).toBe('stored');
    expect(state.attempts).toBe(3);
    expect(told).toEqual([`waiting 0 100 ${full().message}`, `waiting 1 200 ${full().message}`, 'back']);
  });

  it('says nothing when the first attempt goes through, and never waits out another error', async () => {
    const told: string[] = [];
    const hooks = { waiting: () => told.push('waiting'), back: () => told.push('back') };
    expect(await whenStored(() => Promise.resolve(1), hooks)).toBe(1);
    await expect(whenStored(() => Promise.reject(new Error('a bug')), hooks)).rejects.toThrow('a bug');
    expect(told).toEqual([]);
  });

  it('ends the wait with the refusal when stopped or aborted', async () => {
    const stopped = flaky(5);
    await expect(
      whenStored(stopped.write, { waiting: () => undefined, back: () => undefined, stop: () => true }),
    ).rejects.toBeInstanceOf(StorageUnavailableError);
    expect(stopped.state.attempts).toBe(1);

    const abort = new AbortController();
    const aborted = flaky(1_000);
    const waiting = whenStored(aborted.write, {
      waiting: (_e, attempt) => attempt === 2 && abort.abort(),
      back: () => undefined,
      signal: abort.signal,
    });
    await expect(waiting).rejects.toBeInstanceOf(StorageUnavailableError);
    expect(aborted.state.attempts).toBe(3);
  });

  it('waits 100 ms, doubling, at most 5 s', () => {
    expect([0, 1, 2, 5, 6, 20].map(storageRetryMs)).toEqual([100, 200, 400, 3200, 5000, 5000]);
  });
});
