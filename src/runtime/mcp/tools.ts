/**
 * A server's tools as the model sees them: `<server>__<tool>`, its description and input schema,
 * run through the same approval path as the built-in tools (the prompt broker, by the approval
 * mode) and, being ordinary ToolDefinitions, through the same guards (hooks, checkpoints).
 *
 * Crash semantics are the terminal's: a call is marked started durably right before it is sent
 * (REC-7), so one a crash interrupted is `unknown` and never sent again; a server that dies during
 * a call ends that call with a tool error saying its effect is unknown, and it is not sent again.
 */
import type { ApprovalOutcome, JsonSchema, ToolContext, ToolDefinition, ToolResult } from '../types.js';
import { PROGRESS_INTERVAL_MS } from '../tools/progress.js';
import { approvalOf, MCP_TOOL_SEPARATOR, offersTool, type McpServerConfig } from './config.js';
import { McpUnavailableError, oneLine, type McpConnection, type McpListedTool } from './connection.js';

/** What a result may hold before it is cut (head and tail kept), as the terminal's output cap. */
export const MCP_RESULT_CAP = 64 * 1024;
/** The longest tool name chat-completions providers take. */
const MAX_TOOL_NAME = 64;

/** The name the model calls a server tool by; null when it cannot be one (too long). */
export function exposedName(server: string, tool: string): string | null {
  const name = `${server}${MCP_TOOL_SEPARATOR}${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  return name.length <= MAX_TOOL_NAME ? name : null;
}

export function serverTools(
  server: string,
  config: McpServerConfig,
  listed: readonly McpListedTool[],
  connection: McpConnection,
): ToolDefinition[] {
  const out: ToolDefinition[] = [];
  const taken = new Set<string>();
  for (const tool of listed) {
    if (!offersTool(config, tool.name)) continue;
    const name = exposedName(server, tool.name);
    if (name === null || taken.has(name)) continue;
    taken.add(name);
    out.push(serverTool(server, config, tool, name, connection));
  }
  return out;
}

function serverTool(
  server: string,
  config: McpServerConfig,
  tool: McpListedTool,
  name: string,
  connection: McpConnection,
): ToolDefinition {
  const readOnly = tool.annotations?.readOnlyHint === true;
  const mode = approvalOf(config, tool.name);
  return {
    name,
    toolset: `mcp:${server}`,
    description: `${tool.description?.trim() || tool.name} (tool "${tool.name}" of the MCP server "${server}")`,
    parameters: schemaOf(tool.inputSchema),
    changesFiles: !readOnly,
    marksOwnStart: true,
    async run(args, context) {
      if (mode === 'always' || (mode === 'detect' && !readOnly)) {
        const outcome = await context.requestApproval({
          kind: 'command',
          command: `${name} ${JSON.stringify(args)}`,
          reason:
            mode === 'always'
              ? `the MCP server "${server}" is configured to ask before every call of "${tool.name}" (approval: always)`
              : `"${tool.name}" of the MCP server "${server}" is not marked read-only`,
          cwd: context.cwd,
          gate: { yolo: context.yolo, flagged: true },
        });
        if (outcome.kind !== 'approved') return notApproved(outcome);
        if (context.signal.aborted) return notApproved({ kind: 'cancelled' });
      }
      // REC-7: durable before the request leaves; a crash from here on never sends it again.
      await context.markStarted();
      return callServer(connection, server, tool.name, args, context);
    },
  };
}

async function callServer(
  connection: McpConnection,
  server: string,
  tool: string,
  args: Record<string, unknown>,
  context: ToolContext,
): Promise<ToolResult> {
  const started = Date.now();
  let lastReport = 0;
  try {
    const result = await connection.call(tool, args, {
      signal: context.signal,
      onProgress: (progress, total, message) => {
        const now = Date.now();
        if (!context.reportProgress || now - lastReport < PROGRESS_INTERVAL_MS) return;
        lastReport = now;
        const of = total === undefined ? '' : ` of ${total}`;
        context.reportProgress({
          last_line: `progress ${progress}${of}${message ? `: ${message}` : ''}`.slice(0, 200),
          elapsed_ms: now - started,
          bytes: 0,
        });
      },
    });
    return { content: capped(result.text), isError: result.isError };
  } catch (error) {
    if (error instanceof McpUnavailableError)
      return { content: `${error.message}. The call was not sent.`, isError: true };
    const message = oneLine(error);
    if (/timed out|timeout/i.test(message))
      return {
        content: `The MCP server "${server}" did not answer "${tool}" within ${connection.timeoutMs / 1000} s (timeout_s); the call was abandoned and its effect is unknown.`,
        isError: true,
      };
    if (/Connection closed|Not connected/i.test(message))
      return {
        content: `The MCP server "${server}" stopped during the call of "${tool}" (${connection.lastError ?? message}). Its effect is unknown; the call was not sent again.`,
        isError: true,
      };
    return { content: `The MCP server "${server}" refused "${tool}": ${message}`, isError: true };
  }
}

/**
 * The tool that stands for a server that could not be listed: the model sees why, and calling it
 * tries the server again (a start that succeeds offers its tools from the next turn on).
 */
export function unavailableTool(
  server: string,
  why: string,
  connection: McpConnection | null,
): ToolDefinition {
  return {
    name: `${server}${MCP_TOOL_SEPARATOR}unavailable`,
    toolset: `mcp:${server}`,
    description: `The MCP server "${server}" is not available: ${why}. Its tools cannot be used in this turn. Call this to try starting it again.`,
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    marksOwnStart: true,
    async run() {
      if (!connection)
        return { content: `The MCP server "${server}" is not available: ${why}.`, isError: true };
      try {
        const tools = await connection.listTools();
        return {
          content: `The MCP server "${server}" is running now with ${tools.length} tools; they are offered from the next turn.`,
        };
      } catch (error) {
        return { content: error instanceof Error ? error.message : String(error), isError: true };
      }
    },
  };
}

function notApproved(outcome: Exclude<ApprovalOutcome, { kind: 'approved' }>): ToolResult {
  switch (outcome.kind) {
    case 'denied':
      return {
        content:
          outcome.by === 'config'
            ? 'Denied by configuration (approvals.mode: deny): this MCP call needs an approval, and this gateway refuses every call that does. It was not sent.'
            : 'The user denied this MCP call. It was not sent.',
        isError: true,
      };
    case 'timeout':
      return {
        content: 'Nobody answered the approval request in time. The MCP call was not sent.',
        isError: true,
      };
    case 'cancelled':
      return { content: 'Interrupted while waiting for approval. The MCP call was not sent.', isError: true };
  }
}

/** The server's input schema as a tool schema: always an object with properties. */
function schemaOf(input: Record<string, unknown>): JsonSchema {
  const properties =
    input['properties'] && typeof input['properties'] === 'object'
      ? (input['properties'] as Record<string, unknown>)
      : {};
  return { ...input, type: 'object', properties };
}

function capped(text: string): string {
  if (text.length <= MCP_RESULT_CAP) return text;
  const half = MCP_RESULT_CAP / 2;
  return `${text.slice(0, half)}\n[output truncated: ${text.length - MCP_RESULT_CAP} characters dropped]\n${text.slice(-half)}`;
}
