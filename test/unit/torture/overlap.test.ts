import { describe, expect, it } from 'vitest';
import type { RecordedRequest } from '../../../src/runtime/demo/server.js';
import { ADMISSION_HEADER } from '../../../src/runtime/runner.js';
import { overlappingRequests } from '../../../scripts/torture/cluster.js';

function request(admission: string, received_at: number, finished_at: number | null): RecordedRequest {
  return {
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { [ADMISSION_HEADER]: admission },
    body: null,
    received_at,
    finished_at,
  };
}

const sessions: Record<string, string> = { a1: 's1', a2: 's1', b1: 's2' };
const sessionOf = (id: string) => sessions[id];

describe('cluster torture: two turns of one session at once', () => {
  it('accepts model requests of one session one after another, and of two sessions at once', () => {
    const found = overlappingRequests(
      [request('a1', 0, 10), request('b1', 5, 20), request('a2', 10, 30), request('a2', 31, null)],
      sessionOf,
    );
    expect(found).toEqual([]);
  });

  it('reports a request of one session that began while another of it was open', () => {
    const found = overlappingRequests([request('a2', 12, 40), request('a1', 0, 15)], sessionOf);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('session s1');
    expect(found[0]).toContain('a2 began while one of a1');
  });

  it('treats a request still open at the end as open for ever', () => {
    expect(overlappingRequests([request('a1', 0, null), request('a2', 1000, 1001)], sessionOf)).toHaveLength(
      1,
    );
  });
});
