/**
 * The `delegate` tool (issue 28, docs/scheduling.md "Background delegations"): the model hands a task
 * to a background child session, narrower than or equal to its own, and goes on; the child's result
 * arrives later in this conversation as a message of its own. It asks for approval like a command
 * (unless the session runs in yolo), then the gateway starts the delegation.
 *
 * The registry holds a stand-in that says delegations are not available; the gateway binds the real
 * one (withDelegation) to its delegation service, as it binds the terminal to its environment.
 */
import type { ApprovalOutcome, ToolContext, ToolDefinition, ToolResult } from '../types.js';

/** What the gateway does for the tool: starts the delegation, or throws with a message for the model. */
export interface DelegatePort {
  start(request: {
    sessionId: string;
    admissionId: string;
    toolCallId: string;
    task: string;
    toolsets?: string[];
  }): Promise<{ delegation_id: string; child_session_id: string | null; duplicate: boolean }>;
}

const NAME = 'delegate';

function fail(content: string): ToolResult {
  return { content, isError: true };
}

function notApproved(outcome: Exclude<ApprovalOutcome, { kind: 'approved' }>): ToolResult {
  switch (outcome.kind) {
    case 'denied':
      return fail(
        outcome.by === 'config'
          ? 'Denied by configuration (approvals.mode: deny). The delegation was not started.'
          : 'The user denied this delegation. It was not started.',
      );
    case 'timeout':
      return fail('Nobody answered the approval request in time. The delegation was not started.');
    case 'cancelled':
      return fail('Interrupted while waiting for approval. The delegation was not started.');
  }
}

function readArgs(args: Record<string, unknown>): { task: string; toolsets?: string[] } | string {
  const { task, toolsets } = args;
  if (typeof task !== 'string' || task.trim() === '') return '`task` must be a non-empty string.';
  if (toolsets !== undefined && (!Array.isArray(toolsets) || !toolsets.every((t) => typeof t === 'string')))
    return '`toolsets` must be an array of toolset names.';
  return toolsets === undefined ? { task } : { task, toolsets: toolsets };
}

function createDelegateTool(port: DelegatePort | null): ToolDefinition {
  return {
    name: NAME,
    toolset: 'delegation',
    description:
      'Hand a task to a background helper session that runs while this conversation goes on. It gets ' +
      'the same or fewer tools (`toolsets`) and never more power than this session. Its result arrives ' +
      'later in this conversation as a message starting "Background delegation"; do not wait for it.',
    parameters: {
      type: 'object',
      properties: {
        task: { type: 'string', description: 'What the helper should do, self-contained.' },
        toolsets: {
          type: 'array',
          items: { type: 'string' },
          description: "The helper's toolsets: some of this session's (default: all of them).",
        },
      },
      required: ['task'],
      additionalProperties: false,
    },
    // It asks first; its side effect (the delegation) is marked started only once approved.
    marksOwnStart: true,
    async run(args, context: ToolContext) {
      const request = readArgs(args);
      if (typeof request === 'string') return fail(request);
      if (port === null || context.admissionId === undefined || context.toolCallId === undefined)
        return fail('Delegations are not available in this session.');
      const outcome = await context.requestApproval({
        kind: 'command',
        command: `delegate: ${request.task}`,
        reason: 'starts a background session that works on this task with this session’s tools',
        cwd: context.cwd,
        gate: { yolo: context.yolo, flagged: true },
      });
      if (outcome.kind !== 'approved') return notApproved(outcome);
      await context.markStarted();
      try {
        const started = await port.start({
          sessionId: context.sessionId,
          admissionId: context.admissionId,
          toolCallId: context.toolCallId,
          ...request,
        });
        return {
          content:
            `Delegation ${started.delegation_id} started in the background` +
            (started.child_session_id ? ` (child session ${started.child_session_id})` : '') +
            '. Its result will arrive in this conversation as a message when it ends; go on meanwhile.',
        };
      } catch (error) {
        return fail(
          `The delegation was not started: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    },
  };
}

/** The registry's stand-in: a session whose gateway binds no delegations is told so. */
export const delegateTool: ToolDefinition = createDelegateTool(null);

/** The tools with `delegate` bound to the gateway's delegations. */
export function withDelegation(tools: readonly ToolDefinition[], port: DelegatePort): ToolDefinition[] {
  return tools.map((tool) => (tool.name === NAME ? createDelegateTool(port) : tool));
}
