import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RecordedRequest } from '../../../src/runtime/demo/server.js';
import { ADMISSION_HEADER } from '../../../src/runtime/runner.js';
import type { AdmissionFact } from '../../../scripts/torture/checks.js';
import type { JobRunFact } from '../../../scripts/torture/evidence.js';
import { JobWorkload } from '../../../scripts/torture/jobs.js';

const I1 = '2026-03-02T08:01:00.000Z';
const I2 = '2026-03-02T08:02:00.000Z';

/** One job, two minutes on its clock, its session's transcript holding `stored` (admission ids). */
function workload(stored: string[]): JobWorkload {
  const w = new JobWorkload(mkdtempSync(join(tmpdir(), 'gh-jobs-check-')), 1);
  w.jobs.push({ job_id: 'job_1', session_id: 's1' });
  w.advance();
  w.advance();
  w.transcripts.set(
    's1',
    stored.map((id) => ({ role: 'user', content: 'scheduled tick 0', admission_id: id })),
  );
  return w;
}

function run(instant: string, admission: string, outcome = 'completed'): JobRunFact {
  return {
    job_id: 'job_1',
    submission_id: `job:job_1:${instant}`,
    instant,
    kind: 'scheduled',
    state: 'settled',
    admission_id: admission,
    outcome,
  };
}

function admission(instant: string, id: string, state = 'completed', resumes = 0): AdmissionFact {
  return {
    admission_id: id,
    logical_id: 's1',
    submission_id: `job:job_1:${instant}`,
    seq: 1,
    state,
    started_at: null,
    settled_at: null,
    detail: null,
    resumes,
    text: 'scheduled tick 0',
  };
}

/** A model request opening a turn of `id`. */
function start(id: string): RecordedRequest {
  return {
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { [ADMISSION_HEADER]: id },
    body: { messages: [{ role: 'user', content: 'scheduled tick 0' }] },
    received_at: 0,
    finished_at: 1,
  };
}

describe('cluster torture: every scheduled instant fired exactly once', () => {
  it('counts each due instant fired once, and an unknown one the harness resolved apart', () => {
    const w = workload(['a1', 'a2']);
    const { tally, violations } = w.check(
      [run(I1, 'a1'), run(I2, 'a2', 'unknown')],
      [admission(I1, 'a1'), admission(I2, 'a2', 'interrupted')],
      [start('a1'), start('a2')],
      new Set(['a2']),
    );
    expect(violations).toEqual([]);
    expect(tally).toEqual({ jobs: 1, instants: 2, fired: 1, unknown: 1, lost: 0, duplicated: 0 });
  });

  it('reports an instant never fired as lost', () => {
    const w = workload(['a1']);
    const { tally, violations } = w.check([run(I1, 'a1')], [admission(I1, 'a1')], [start('a1')], new Set());
    expect(tally).toMatchObject({ fired: 1, lost: 1, duplicated: 0 });
    expect(violations).toEqual([`job job_1: the firing of ${I2} is lost (run missing, admission missing)`]);
  });

  it('reports a firing run twice (more turn starts than resumes allow, or stored twice) as duplicated', () => {
    const w = workload(['a1', 'a2', 'a2']);
    const { tally, violations } = w.check(
      [run(I1, 'a1'), run(I2, 'a2')],
      [admission(I1, 'a1', 'completed', 0), admission(I2, 'a2')],
      [start('a1'), start('a1'), start('a2')],
      new Set(),
    );
    expect(tally).toMatchObject({ fired: 2, lost: 0, duplicated: 2 });
    expect(violations).toEqual([
      `job job_1: the firing of ${I1} ran 2 turns (0 resumes), stored 1 times`,
      `job job_1: the firing of ${I2} ran 1 turns (0 resumes), stored 2 times`,
    ]);
  });
});
