/**
 * REC-7: a prompt recreated after a crash keeps its prompt id and its original request time, so
 * its timeout counts from when it was first asked, not from the restart.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PromptBroker } from '../../../src/runtime/approvals/broker.js';
import type { ApprovalOutcome, TurnEvent, TurnScope } from '../../../src/runtime/types.js';

const START = Date.parse('2026-12-02T06:00:00Z');
const TIMEOUT_MS = 60_000;

beforeEach(() => {
  vi.useFakeTimers({ now: START });
});
afterEach(() => {
  vi.useRealTimers();
});

function scope(events: TurnEvent[], resumePrompt?: TurnScope['resumePrompt']): TurnScope {
  return {
    sessionId: 'ses_a',
    admissionId: 'adm_a',
    executionGeneration: 2,
    signal: new AbortController().signal,
    emit: (event) => events.push(event),
    ...(resumePrompt ? { resumePrompt } : {}),
  };
}

const request = { kind: 'command' as const, command: 'rm -rf victim', reason: 'recursive delete' };

describe('a recreated approval prompt', () => {
  it('keeps its prompt id, and times out at its original request time plus the timeout', async () => {
    const broker = new PromptBroker({ approvalTimeoutMs: TIMEOUT_MS });
    const recreated: TurnEvent[] = [];
    const fresh: TurnEvent[] = [];
    const outcomes: Record<string, ApprovalOutcome> = {};
    // Asked 50 s before the restart: 10 s of its minute are left.
    void broker
      .requestApproval(
        scope(recreated, { prompt_id: 'prm_original', requested_at: new Date(START - 50_000).toISOString() }),
        request,
      )
      .then((o) => (outcomes['recreated'] = o));
    void broker.requestApproval(scope(fresh), request).then((o) => (outcomes['fresh'] = o));
    await vi.advanceTimersByTimeAsync(0);
    expect(recreated[0]).toMatchObject({ type: 'approval.request', prompt_id: 'prm_original' });
    expect(broker.pendingPrompts('ses_a').map((p) => p.created_at)).toContain(
      new Date(START - 50_000).toISOString(),
    );

    await vi.advanceTimersByTimeAsync(9_999);
    expect(outcomes).toEqual({});
    await vi.advanceTimersByTimeAsync(1);
    expect(outcomes['recreated']).toEqual({ kind: 'timeout' });
    // A prompt first asked at the restart still has its whole minute.
    expect(outcomes['fresh']).toBeUndefined();
    await vi.advanceTimersByTimeAsync(50_000);
    expect(outcomes['fresh']).toEqual({ kind: 'timeout' });
  });

  it('one older than its timeout expires at once: a restart never gives it more time', async () => {
    const broker = new PromptBroker({ approvalTimeoutMs: TIMEOUT_MS });
    const events: TurnEvent[] = [];
    let outcome: ApprovalOutcome | null = null;
    void broker
      .requestApproval(
        scope(events, { prompt_id: 'prm_old', requested_at: new Date(START - 3_600_000).toISOString() }),
        request,
      )
      .then((o) => (outcome = o));
    await vi.advanceTimersByTimeAsync(0);
    expect(outcome).toEqual({ kind: 'timeout' });
  });
});
