/**
 * A torture client notes in the run's log every call that stays unanswered, so a run that outlives
 * its test's bound prints the call it waited on (issue 33: a torture run once did, and its log did
 * not say where).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Ledger, TortureClient } from '../../../scripts/torture/client.js';
import type { GatewayClient } from '../../../src/surfaces/client/rpc-client.js';

// The clock is vitest's (Date.now, setTimeout, setInterval): the notes depend on no machine's load.
const dirs: string[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A daemon that answers `session.create` after `delayMs`. */
function slowDaemon(delayMs: number): GatewayClient {
  return {
    closed: false,
    call: (method: string) =>
      new Promise((resolve, reject) =>
        setTimeout(
          () =>
            method === 'session.create'
              ? resolve({ session_id: 'sess-1' })
              : reject(new Error(`unexpected ${method}`)),
          delayMs,
        ),
      ),
  } as unknown as GatewayClient;
}

function client(log: string[] | null): TortureClient {
  const work = mkdtempSync(join(tmpdir(), 'torture-watch-'));
  dirs.push(work);
  const watch = log ? { log: (line: string) => log.push(line), noteMs: 40 } : null;
  const c = new TortureClient('c0', new Ledger(), (id) => join(work, id), watch);
  // One pending call: the slow session.create.
  c.pending.push({ kind: 'create', request_id: 'c0-s1', cwd: join(work, 'c0-s1') });
  return c;
}

describe('torture client: calls left unanswered are noted in the run log', () => {
  it('notes a slow call every interval while it waits, and nothing once it is answered', async () => {
    const log: string[] = [];
    const c = client(log);
    vi.useFakeTimers();
    const running = c.run(slowDaemon(150));
    await vi.advanceTimersByTimeAsync(150);
    await running;
    expect(c.pending).toEqual([]);
    expect(log).toEqual([
      'c0 create c0-s1: no answer after 0.0 s',
      'c0 create c0-s1: no answer after 0.1 s',
      'c0 create c0-s1: no answer after 0.1 s',
    ]);
    await vi.advanceTimersByTimeAsync(200);
    expect(log).toHaveLength(3);
  });

  it('a call answered within the interval is not noted', async () => {
    const log: string[] = [];
    vi.useFakeTimers();
    const running = client(log).run(slowDaemon(5));
    await vi.advanceTimersByTimeAsync(5);
    await running;
    await vi.advanceTimersByTimeAsync(200);
    expect(log).toEqual([]);
  });
});
