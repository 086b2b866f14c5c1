/** One editor prompt followed through the session's events (src/surfaces/acp/turn.ts). */
import type { SessionUpdate } from '@agentclientprotocol/sdk';
import { describe, expect, it } from 'vitest';
import { PromptTurn } from '../../../src/surfaces/acp/turn.js';
import type { GatehouseEvent } from '../../../src/surfaces/acp/translate.js';

function turn() {
  const updates: SessionUpdate[] = [];
  const approvals: [GatehouseEvent, string | null][] = [];
  const settled: string[] = [];
  const t = new PromptTurn('sub-1', {
    update: (u) => {
      updates.push(u);
      return Promise.resolve();
    },
    approval: (e, id) => approvals.push([e, id]),
    approvalSettled: (id) => settled.push(id),
  });
  return { t, updates, approvals, settled };
}

describe('PromptTurn', () => {
  it('streams only its own turn, and ends at its settlement', async () => {
    const { t, updates } = turn();
    // Another viewer's turn runs first: nothing of it reaches the editor.
    t.receive({ type: 'turn.start', admission_id: 'other', execution_generation: 1 });
    t.receive({ type: 'admission.queued', admission_id: 'mine', submission_id: 'sub-1' });
    t.receive({ type: 'text.delta', text: 'not mine' });
    t.receive({ type: 'turn.complete', outcome: 'completed' });
    t.receive({ type: 'admission.settled', admission_id: 'other', outcome: 'completed' });
    t.receive({ type: 'turn.start', admission_id: 'mine', execution_generation: 2 });
    t.receive({ type: 'text.delta', text: 'mine' });
    expect(t.phase).toBe('live');
    expect(t.generation).toBe(2);
    t.receive({ type: 'turn.complete', outcome: 'completed' });
    t.receive({ type: 'admission.settled', admission_id: 'mine', outcome: 'completed' });
    expect(await t.ended).toEqual({ kind: 'stop', stopReason: 'end_turn' });
    expect(updates).toEqual([
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'mine' } },
    ]);
  });

  it('keeps events from before its admission id was known, and replays them', async () => {
    const { t, updates } = turn();
    t.receive({ type: 'turn.start', admission_id: 'mine', execution_generation: 1 });
    t.receive({ type: 'text.delta', text: 'early' });
    t.receipt({ admission_id: 'mine', state: 'running' });
    t.receive({ type: 'admission.settled', admission_id: 'mine', outcome: 'interrupted' });
    expect(await t.ended).toEqual({ kind: 'stop', stopReason: 'cancelled' });
    expect(updates).toHaveLength(1);
  });

  it('routes an approval of its turn with the tool call it belongs to', () => {
    const { t, approvals, settled } = turn();
    t.receipt({ admission_id: 'mine', state: 'queued' });
    t.receive({ type: 'turn.start', admission_id: 'mine', execution_generation: 1 });
    t.receive({ type: 'tool.start', tool_call_id: 'c9', name: 'terminal', arguments: '{}' });
    t.receive({
      type: 'approval.request',
      prompt_id: 'p1',
      execution_generation: 1,
      choices: ['once', 'deny'],
    });
    t.receive({ type: 'approval.settled', prompt_id: 'p1' });
    expect(approvals.map(([e, id]) => [e['prompt_id'], id])).toEqual([['p1', 'c9']]);
    expect(settled).toEqual(['p1']);
  });

  it('fails with the turn error, an unknown receipt, or a lost gateway', async () => {
    const failed = turn().t;
    failed.receipt({ admission_id: 'a', state: 'queued' });
    failed.receive({ type: 'turn.start', admission_id: 'a', execution_generation: 1 });
    failed.receive({
      type: 'turn.complete',
      outcome: 'failed',
      error: { reason: 'model_error', message: 'no' },
    });
    failed.receive({ type: 'admission.settled', admission_id: 'a', outcome: 'failed' });
    expect(await failed.ended).toEqual({
      kind: 'failed',
      outcome: 'failed',
      error: { reason: 'model_error', message: 'no' },
    });

    const unknown = turn().t;
    unknown.receipt({ admission_id: 'b', state: 'unknown' });
    expect(await unknown.ended).toMatchObject({ kind: 'failed', outcome: 'unknown' });

    const lost = turn().t;
    lost.receipt({ admission_id: 'c', state: 'running' });
    lost.fail('gateway_lost', 'gone');
    lost.receive({ type: 'admission.settled', admission_id: 'c', outcome: 'completed' });
    expect(await lost.ended).toMatchObject({ kind: 'failed', outcome: 'gateway_lost' });
  });

  it('answers a settled duplicate at once', async () => {
    const { t } = turn();
    t.receipt({ admission_id: 'd', state: 'completed' });
    expect(await t.ended).toEqual({ kind: 'stop', stopReason: 'end_turn' });
  });
});
