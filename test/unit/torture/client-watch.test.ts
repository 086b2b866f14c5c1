/**
 * A torture client notes in the run's log every call that stays unanswered, so a run that outlives
 * its test's bound prints the call it waited on (issue 33: a torture run once did, and its log did
 * not say where).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Ledger, TortureClient } from '../../../scripts/torture/client.js';
import { Rng } from '../../../scripts/torture/rng.js';
import type { GatewayClient } from '../../../src/surfaces/client/rpc-client.js';

const dirs: string[] = [];
afterEach(() => {
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
  // One creation and no submits: the only call is the slow session.create.
  c.plan(new Rng(1), true, 0, (id) => ({ text: id, tool: false }));
  return c;
}

describe('torture client: calls left unanswered are noted in the run log', () => {
  it('notes a slow call every interval while it waits, and nothing once it is answered', async () => {
    const log: string[] = [];
    const c = client(log);
    await c.run(slowDaemon(150));
    expect(c.pending).toEqual([]);
    const notes = log.length;
    expect(notes).toBeGreaterThanOrEqual(2);
    expect(log[0]).toMatch(/^c0 create c0-s1: no answer after 0\.\d s$/);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(log).toHaveLength(notes);
  });

  it('a call answered within the interval is not noted', async () => {
    const log: string[] = [];
    await client(log).run(slowDaemon(5));
    expect(log).toEqual([]);
  });
});
