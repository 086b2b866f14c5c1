import { describe, expect, it } from 'vitest';
import { refreshUnknowns } from '../../../scripts/torture/approver.js';
import { Ledger } from '../../../scripts/torture/client.js';
import type { AdmissionStatus, StoreEvidence } from '../../../scripts/torture/evidence.js';
import { resolveUnknowns, type Unknown } from '../../../scripts/torture/harness.js';
import type { GatewayClient } from '../../../src/surfaces/client/rpc-client.js';

/** The store as the harness reads it: only `status` is asked for. */
function storeOf(rows: Record<string, AdmissionStatus>): StoreEvidence {
  return { status: (id: string) => Promise.resolve(rows[id] ?? null) } as unknown as StoreEvidence;
}

function unknown(admission_id: string, generation: number): Unknown {
  return { request_id: 'c0-s1', session_id: 's1', admission_id, generation };
}

describe('torture harness: the unknowns it resolves', () => {
  it('drops what recovery resumed, keeps what is unknown with its generation and reason', async () => {
    const tracked = new Map([
      ['resumed', unknown('resumed', 1)],
      ['unknown', unknown('unknown', 1)],
    ]);
    const reasons = new Map<string, string>();
    await refreshUnknowns(
      storeOf({
        resumed: { state: 'completed', generation: 2, detail: null },
        unknown: { state: 'unknown', generation: 3, detail: 'tool_running: terminal' },
      }),
      tracked,
      reasons,
    );
    expect([...tracked.keys()]).toEqual(['unknown']);
    expect(tracked.get('unknown')!.generation).toBe(3);
    expect(reasons.get('unknown')).toBe('tool_running: terminal');
  });

  it('a resolution whose answer a kill cut off is asked again and counted as resolved', async () => {
    // The daemon committed the harness's prompt.resolve_unknown and was killed before answering:
    // the harness kept it pending (the connection closed), and the next start finds it interrupted.
    const tracked = new Map([['a1', unknown('a1', 2)]]);
    const reasons = new Map([['a1', 'tool_running: terminal']]);
    await refreshUnknowns(
      storeOf({ a1: { state: 'interrupted', generation: 2, detail: 'resolved by owner' } }),
      tracked,
      reasons,
    );
    expect([...tracked.keys()]).toEqual(['a1']);
    expect(reasons.get('a1')).toBe('tool_running: terminal');

    // The repeat gets the daemon's answer to a retry of a committed resolution (inputs.ts).
    const calls: unknown[] = [];
    const client = {
      closed: false,
      call: (method: string, params: unknown) => {
        calls.push({ method, params });
        return Promise.resolve({ resolved: true, outcome: 'interrupted', duplicate: true });
      },
    } as unknown as GatewayClient;
    const ledger = new Ledger();
    const resolved = new Set<string>();
    await resolveUnknowns(client, ledger, [...tracked.values()], resolved, tracked);
    expect(calls).toEqual([
      {
        method: 'prompt.resolve_unknown',
        params: { session_id: 's1', admission_id: 'a1', execution_generation: 2 },
      },
    ]);
    expect(resolved.has('a1')).toBe(true);
    expect(tracked.size).toBe(0);
    expect(ledger.retries).toBe(1);
    expect(ledger.violations).toEqual([]);
  });

  it('an admission interrupted otherwise is not the harness resolution: it is dropped', async () => {
    const tracked = new Map([['a1', unknown('a1', 2)]]);
    await refreshUnknowns(
      storeOf({ a1: { state: 'interrupted', generation: 2, detail: 'interrupted by the user' } }),
      tracked,
      new Map(),
    );
    expect(tracked.size).toBe(0);
  });
});
