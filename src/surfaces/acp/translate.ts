/**
 * What an editor sees of a Gatehouse session over the Agent Client Protocol. Pure: each function
 * maps Gatehouse's words (session events, stored messages, approval choices, launch fields) to
 * ACP's (session updates, permission options, stop reasons, MCP servers) or refuses, so every rule
 * is unit-tested without a process or a socket. The bridge (bridge.ts) does the I/O.
 *
 * editor      The ACP client (Zed, say) driving `gatehouse acp` over stdio: one more viewer of
 *             the session, which lives on when the editor goes.
 * bridge      The `gatehouse acp` process: an ACP agent on stdio, a viewer of the daemon over its
 *             WebSocket.
 */
import type {
  ContentBlock,
  McpServer,
  PermissionOption,
  PermissionOptionKind,
  SessionUpdate,
  StopReason,
  ToolKind,
} from '@agentclientprotocol/sdk';
import { MCP_SERVER_NAME } from '../../runtime/mcp/config.js';

/** A Gatehouse session event as a viewer receives it. */
export interface GatehouseEvent {
  type: string;
  [field: string]: unknown;
}

/** A stored transcript message as `session.resume` returns it. */
export interface StoredMessage {
  role: string;
  content: string | null;
  reasoning?: string | null;
  tool_calls?: { id?: string; function?: { name?: string; arguments?: string } }[];
  tool_call_id?: string;
  tool_outcome?: { is_error?: boolean; approval?: string };
}

/** A refusal of what the editor asked for: the bridge answers it as `invalid_params`. */
export class AcpInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AcpInputError';
  }
}

const text = (value: string): ContentBlock => ({ type: 'text', text: value });

/** An event field as text: a string as it is, nothing as '', anything else as JSON. */
export function str(value: unknown): string {
  if (typeof value === 'string') return value;
  return value === undefined || value === null ? '' : JSON.stringify(value);
}

/** Tools by what they do, as ACP lets an editor show them (an MCP tool is `other`). */
const TOOL_KINDS: Record<string, ToolKind> = {
  terminal: 'execute',
  read_file: 'read',
  list_directory: 'read',
  write_file: 'edit',
  clarify: 'think',
};

export function toolKind(name: string): ToolKind {
  return TOOL_KINDS[name] ?? 'other';
}

/** The tool call as one title line: `terminal: ls -la`, or the name and its JSON arguments. */
export function toolTitle(name: string, args: string): string {
  let shown = args;
  try {
    const parsed = JSON.parse(args) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      const values = Object.values(parsed);
      shown = values.length === 1 && typeof values[0] === 'string' ? values[0] : JSON.stringify(parsed);
    }
  } catch {
    // Arguments that are not JSON are shown as the model sent them.
  }
  const line = shown.replace(/\s+/g, ' ').trim();
  return `${name}: ${line.length > 200 ? `${line.slice(0, 199)}…` : line}`.replace(/: $/, '');
}

function rawInput(args: string): unknown {
  try {
    return JSON.parse(args) as unknown;
  } catch {
    return args;
  }
}

/**
 * The session update a live event of the editor's own turn becomes, or null when the editor is
 * not shown it (admission bookkeeping, the stored copy of what already streamed).
 */
export function liveUpdate(event: GatehouseEvent): SessionUpdate | null {
  switch (event.type) {
    case 'text.delta':
      return { sessionUpdate: 'agent_message_chunk', content: text(str(event['text'])) };
    case 'reasoning.delta':
      return { sessionUpdate: 'agent_thought_chunk', content: text(str(event['text'])) };
    case 'tool.start': {
      const name = String(event['name']);
      const args = str(event['arguments']);
      return {
        sessionUpdate: 'tool_call',
        toolCallId: String(event['tool_call_id']),
        title: toolTitle(name, args),
        kind: toolKind(name),
        status: 'in_progress',
        rawInput: rawInput(args),
      };
    }
    case 'tool.output':
      return {
        sessionUpdate: 'tool_call_update',
        toolCallId: String(event['tool_call_id']),
        status: 'in_progress',
        content: [{ type: 'content', content: text(str(event['last_line'])) }],
      };
    case 'tool.complete':
      return {
        sessionUpdate: 'tool_call_update',
        toolCallId: String(event['tool_call_id']),
        status: event['is_error'] === true ? 'failed' : 'completed',
        content: [{ type: 'content', content: text(str(event['summary'])) }],
      };
    default:
      return null;
  }
}

/** A stored history as the updates that replay it to an editor loading the session. */
export function historyUpdates(messages: readonly StoredMessage[]): SessionUpdate[] {
  const updates: SessionUpdate[] = [];
  for (const m of messages) {
    if (m.role === 'user') {
      updates.push({ sessionUpdate: 'user_message_chunk', content: text(m.content ?? '') });
    } else if (m.role === 'assistant') {
      if (m.reasoning) updates.push({ sessionUpdate: 'agent_thought_chunk', content: text(m.reasoning) });
      if (m.content) updates.push({ sessionUpdate: 'agent_message_chunk', content: text(m.content) });
      for (const call of m.tool_calls ?? []) {
        const name = call.function?.name ?? 'tool';
        const args = call.function?.arguments ?? '';
        updates.push({
          sessionUpdate: 'tool_call',
          toolCallId: call.id ?? '',
          title: toolTitle(name, args),
          kind: toolKind(name),
          status: 'pending',
          rawInput: rawInput(args),
        });
      }
    } else if (m.role === 'tool' && m.tool_call_id) {
      updates.push({
        sessionUpdate: 'tool_call_update',
        toolCallId: m.tool_call_id,
        status: m.tool_outcome?.is_error === true ? 'failed' : 'completed',
        content: [{ type: 'content', content: text(m.content ?? '') }],
      });
    }
  }
  return updates;
}

const OPTIONS: Record<string, { name: string; kind: PermissionOptionKind }> = {
  once: { name: 'Allow once', kind: 'allow_once' },
  session: { name: 'Allow for this session', kind: 'allow_always' },
  always: { name: 'Always allow', kind: 'allow_always' },
  deny: { name: 'Deny', kind: 'reject_once' },
};

/** The approval's choices as permission options; each option's id is the Gatehouse choice. */
export function permissionOptions(choices: readonly string[]): PermissionOption[] {
  return choices
    .filter((c) => OPTIONS[c] !== undefined)
    .map((c) => ({ optionId: c, name: OPTIONS[c]!.name, kind: OPTIONS[c]!.kind }));
}

/**
 * The `approval.respond` choice for the editor's answer: the option it selected when it is one the
 * approval offered, else `deny` (a cancelled request, or an id we never offered, approves nothing).
 */
export function approvalChoice(
  outcome: { outcome: 'cancelled' } | { outcome: 'selected'; optionId: string },
  offered: readonly string[],
): string {
  if (outcome.outcome === 'selected' && offered.includes(outcome.optionId) && outcome.optionId !== 'deny')
    return outcome.optionId;
  return 'deny';
}

/** The ACP stop reason of a settled turn, or null when it failed (an error, not a stop). */
export function stopReason(outcome: string): StopReason | null {
  switch (outcome) {
    case 'completed':
      return 'end_turn';
    case 'cancelled':
    case 'interrupted':
      return 'cancelled';
    default:
      return null;
  }
}

/**
 * The prompt's text: text blocks as written, a resource's text under its URI, a link by its URI.
 * Images and audio are refused (initialize says so): dropping them would answer a different prompt.
 */
export function promptText(blocks: readonly ContentBlock[]): string {
  const parts: string[] = [];
  for (const block of blocks) {
    if (block.type === 'text') parts.push(block.text);
    else if (block.type === 'resource_link') parts.push(`[${block.name}](${block.uri})`);
    else if (block.type === 'resource' && 'text' in block.resource)
      parts.push(`<resource uri="${block.resource.uri}">\n${block.resource.text}\n</resource>`);
    else
      throw new AcpInputError(
        `this agent takes text, resource links and text resources only; a ${block.type === 'resource' ? 'binary resource' : block.type} block cannot be sent`,
      );
  }
  const joined = parts.join('\n').trim();
  if (joined === '') throw new AcpInputError('the prompt has no text');
  return joined;
}

/** An editor's name for a server as a Gatehouse server name: lower-case, `-` for anything else. */
export function serverName(name: string): string {
  const mapped = name
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/_{2,}/g, '_')
    .replace(/^[^a-z]+/, '')
    .replace(/[-_]+$/, '')
    .slice(0, 32)
    .replace(/[-_]+$/, '');
  if (!MCP_SERVER_NAME.test(mapped))
    throw new AcpInputError(
      `the MCP server name "${name}" cannot be used: give it a name with a letter first and letters, digits, - or _`,
    );
  return mapped;
}

/**
 * The editor's MCP servers as the session's own launch servers (`session.create`'s `mcp_servers`):
 * stdio and Streamable HTTP; SSE is refused (initialize does not offer it). Their tools ask for
 * approval unless annotated read-only, as any server's do.
 */
export function launchMcpServers(servers: readonly McpServer[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const server of servers) {
    const name = serverName(server.name);
    if (out[name] !== undefined)
      throw new AcpInputError(`two MCP servers are both named "${name}" here: give them distinct names`);
    if ('type' in server && server.type === 'sse')
      throw new AcpInputError(
        `the MCP server "${server.name}" uses SSE, which Gatehouse does not speak: use its Streamable HTTP endpoint (type "http")`,
      );
    if ('type' in server && server.type === 'http') {
      out[name] = {
        url: server.url,
        headers: Object.fromEntries(server.headers.map((h) => [h.name, h.value])),
      };
    } else if ('command' in server) {
      out[name] = {
        command: server.command,
        args: server.args,
        env: Object.fromEntries(server.env.map((e) => [e.name, e.value])),
      };
    }
  }
  return out;
}
