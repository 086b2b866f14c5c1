/**
 * The `delegate` tool (runtime/tools/delegate.ts): it asks for approval like a command, starts the
 * delegation only once approved (its start marked first), under the request id of its turn's
 * admission and tool call; the registry's stand-in says delegations are not available.
 */
import { describe, expect, it } from 'vitest';
import { delegateTool, withDelegation, type DelegatePort } from '../../../src/runtime/tools/delegate.js';
import type { ApprovalOutcome, ApprovalRequest, ToolContext } from '../../../src/runtime/types.js';

function context(outcome: ApprovalOutcome, log: string[], yolo = false): ToolContext {
  return {
    cwd: '/work',
    signal: new AbortController().signal,
    sessionId: 'parent-1',
    admissionId: 'adm-1',
    toolCallId: 'call-1',
    executionGeneration: 1,
    yolo,
    requestApproval: (request: ApprovalRequest) => {
      log.push(`asked ${request.command} flagged=${request.gate?.flagged} yolo=${request.gate?.yolo}`);
      return Promise.resolve(outcome);
    },
    askClarify: () => Promise.resolve({ kind: 'cancelled' }),
    markStarted: () => {
      log.push('marked');
      return Promise.resolve();
    },
  };
}

function bound(log: string[], fail?: string) {
  const port: DelegatePort = {
    start: (request) => {
      log.push(`start ${JSON.stringify(request)}`);
      if (fail) return Promise.reject(new Error(fail));
      return Promise.resolve({ delegation_id: 'dlg_1', child_session_id: 'child-1', duplicate: false });
    },
  };
  return withDelegation([delegateTool], port)[0]!;
}

describe('the delegate tool', () => {
  it('asks, marks its start, then starts the delegation with its turn and tool call', async () => {
    const log: string[] = [];
    const result = await bound(log).run(
      { task: 'look it up', toolsets: ['clarify'] },
      context({ kind: 'approved', choice: 'once' }, log),
    );
    expect(log).toEqual([
      'asked delegate: look it up flagged=true yolo=false',
      'marked',
      'start {"sessionId":"parent-1","admissionId":"adm-1","toolCallId":"call-1","task":"look it up","toolsets":["clarify"]}',
    ]);
    expect(result).toEqual({
      content:
        'Delegation dlg_1 started in the background (child session child-1). Its result will arrive in this conversation as a message when it ends; go on meanwhile.',
    });
  });

  it('starts nothing when denied, and says why a refused start did not happen', async () => {
    const log: string[] = [];
    expect(await bound(log).run({ task: 't' }, context({ kind: 'denied' }, log))).toEqual({
      content: 'The user denied this delegation. It was not started.',
      isError: true,
    });
    expect(log.filter((l) => l.startsWith('start') || l === 'marked')).toEqual([]);
    const refused = await bound([], 'too wide').run(
      { task: 't' },
      context({ kind: 'approved', choice: 'yolo' }, [], true),
    );
    expect(refused).toEqual({ content: 'The delegation was not started: too wide', isError: true });
  });

  it('refuses bad arguments before asking, and the stand-in says delegations are not available', async () => {
    const log: string[] = [];
    expect(
      await bound(log).run({ task: '' }, context({ kind: 'approved', choice: 'once' }, log)),
    ).toMatchObject({
      isError: true,
      content: '`task` must be a non-empty string.',
    });
    expect(
      await bound(log).run(
        { task: 't', toolsets: 'clarify' },
        context({ kind: 'approved', choice: 'once' }, log),
      ),
    ).toMatchObject({
      content: '`toolsets` must be an array of toolset names.',
    });
    expect(log).toEqual([]);
    expect(await delegateTool.run({ task: 't' }, context({ kind: 'approved', choice: 'once' }, log))).toEqual(
      {
        content: 'Delegations are not available in this session.',
        isError: true,
      },
    );
  });
});
