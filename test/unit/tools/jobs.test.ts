/**
 * The `jobs` toolset's tools (runtime/tools/jobs.ts) over the real prompt broker and a recording
 * port: a yolo session does not approve a job, the operator's approvals.mode does; nothing is
 * checked, asked or added for arguments that cannot be a job; the same call of one turn names the
 * same job.
 */
import { describe, expect, it } from 'vitest';
import { PromptBroker } from '../../../src/runtime/approvals/broker.js';
import type { ApprovalRequest } from '../../../src/runtime/types.js';
import {
  createJobTools,
  type AgentJobInfo,
  type AgentJobRequest,
  type AgentJobs,
} from '../../../src/runtime/tools/jobs.js';
import { harness, tempDir } from './harness.js';

const JOB: AgentJobInfo = {
  job_id: 'job_000000000001',
  name: null,
  schedule_text: 'every 60s',
  text: 'check the build',
  state: 'active',
  next_run: '2026-03-02T08:01:00.000Z',
  last_run: null,
};

/** A port that says yes to everything and records what it was asked. */
function recordingPort(): AgentJobs & { checked: number; added: AgentJobRequest[]; removed: string[] } {
  const port = {
    checked: 0,
    added: [] as AgentJobRequest[],
    removed: [] as string[],
    check: () => {
      port.checked++;
      return Promise.resolve({ ok: true as const, value: 'every 60s' });
    },
    add: (_sessionId: string, request: AgentJobRequest) => {
      port.added.push(request);
      return Promise.resolve({ ok: true as const, value: JOB });
    },
    list: () => Promise.resolve({ ok: true as const, value: [JOB] }),
    remove: (_sessionId: string, jobId: string) => {
      port.removed.push(jobId);
      return Promise.resolve({ ok: true as const, value: JOB });
    },
  };
  return port;
}

function tools(port: AgentJobs) {
  const [schedule, list, remove] = createJobTools(port);
  return { schedule: schedule!, list: list!, remove: remove! };
}

describe('the jobs toolset', () => {
  it('asks a human in a yolo session: the request carries a gate yolo does not open', async () => {
    const port = recordingPort();
    const asked: ApprovalRequest[] = [];
    const { context } = harness(new PromptBroker(), { cwd: tempDir(), yolo: true });
    context.requestApproval = (request) => {
      asked.push(request);
      return Promise.resolve({ kind: 'approved', choice: 'once' });
    };
    const result = await tools(port).schedule.run({ every_s: 60, text: 'check the build' }, context);
    expect(result.isError).toBeUndefined();
    expect(asked).toEqual([
      {
        kind: 'edit',
        command: 'schedule_job: every 60s, admitting into this session: check the build',
        reason:
          'creates a scheduled job: it sends this text to the session on its schedule until it is removed',
        cwd: context.cwd,
        gate: { yolo: false, flagged: true },
      },
    ]);
    expect(port.added).toHaveLength(1);
  });

  it('approvals.mode off adds it unasked; deny refuses it unasked and adds nothing', async () => {
    const on = recordingPort();
    const off = harness(new PromptBroker({ mode: 'off' }), { cwd: tempDir() });
    expect((await tools(on).schedule.run({ every_s: 60, text: 'x' }, off.context)).content).toMatch(
      /^Scheduled job_000000000001: every 60s \[active\]/,
    );
    expect(on.added).toHaveLength(1);

    const refused = recordingPort();
    const deny = harness(new PromptBroker({ mode: 'deny' }), { cwd: tempDir(), yolo: true });
    const result = await tools(refused).schedule.run({ every_s: 60, text: 'x' }, deny.context);
    expect(result).toEqual({
      content: 'Denied by configuration (approvals.mode: deny). No job was scheduled.',
      isError: true,
    });
    expect(refused.added).toEqual([]);
    const removal = await tools(refused).remove.run({ job_id: JOB.job_id }, deny.context);
    expect(removal.content).toBe('Denied by configuration (approvals.mode: deny). The job was not removed.');
    expect(refused.removed).toEqual([]);
  });

  it.each([
    [{ text: 'x' }, 'Give exactly one of'],
    [{ cron: '* * * * *', every_s: 60, text: 'x' }, 'Give exactly one of'],
    [{ every_s: 60, tz: 'Europe/Berlin', text: 'x' }, '`tz` goes with `cron` only.'],
    [{ every_s: '60', text: 'x' }, '`every_s` must be a whole number of seconds.'],
    [{ at: '2026-03-03T08:00:00Z', text: '  ' }, '`text` must be the non-empty message'],
  ])('refuses %j before checking or asking anything', async (args, message) => {
    const port = recordingPort();
    const { context } = harness(new PromptBroker(), { cwd: tempDir() });
    let asked = 0;
    context.requestApproval = () => {
      asked++;
      return Promise.resolve({ kind: 'approved', choice: 'once' });
    };
    const result = await tools(port).schedule.run(args, context);
    expect(result.isError).toBe(true);
    expect(result.content).toContain(message);
    expect(result.content).toMatch(/No job was scheduled\.$/);
    expect([port.checked, asked, port.added.length]).toEqual([0, 0, 0]);
  });

  it('names the same job for the same call of one turn, another for another turn or other arguments', async () => {
    const port = recordingPort();
    const broker = new PromptBroker({ mode: 'off' });
    const first = harness(broker, { cwd: tempDir() }).context;
    const schedule = tools(port).schedule;
    await schedule.run({ every_s: 60, text: 'x' }, first);
    await schedule.run({ every_s: 60, text: 'x' }, first);
    await schedule.run({ every_s: 120, text: 'x' }, first);
    await schedule.run({ every_s: 60, text: 'x' }, { ...first, admissionId: 'adm_other' });
    const ids = port.added.map((r) => r.request_id);
    expect(ids[0]).toMatch(/^agent:adm_test:[0-9a-f]{16}$/);
    expect(ids[1]).toBe(ids[0]);
    expect(new Set(ids).size).toBe(3);
  });
});
