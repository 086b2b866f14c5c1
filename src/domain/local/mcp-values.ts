/**
 * The values of the sessions' own MCP servers' env and headers, held in this daemon's memory only
 * (docs/decisions.md "Session MCP server values in memory only"; the pure rules are in
 * runtime/mcp/values.ts), and `session.mcp.supply`: the session's creator gives them again after a
 * restart. As a session's api_key (LOC-5): in a cluster, the instance that was given them holds them.
 */
import { GatewayError } from '../errors.js';
import type { McpServersConfig } from '../../runtime/mcp/config.js';
import {
  heldFor,
  heldValuesOf,
  unsuppliedOf,
  withoutValues,
  type HeldMcpValues,
} from '../../runtime/mcp/values.js';
import { canonicalJson } from './launch-policy.js';

/**
 * How many bytes of values this daemon holds (`limits.mcp_values_max_bytes` and
 * `limits.mcp_values_total_max_bytes`): a session's, and all sessions' together. A value past
 * either is refused before anything is held or written, so memory cannot be filled through them.
 */
export interface McpValueLimits {
  sessionBytes: number;
  totalBytes: number;
}

export const MCP_VALUE_LIMITS: McpValueLimits = { sessionBytes: 64 * 1024, totalBytes: 16 * 1024 * 1024 };

/** The bytes a session's values take: each env or header name and value, UTF-8. */
export function heldBytes(values: HeldMcpValues | undefined): number {
  let bytes = 0;
  for (const server of Object.values(values ?? {}))
    for (const [name, value] of Object.entries(server))
      bytes += Buffer.byteLength(name) + Buffer.byteLength(value);
  return bytes;
}

export class McpValueStore {
  private readonly bySession = new Map<string, { values: HeldMcpValues; bytes: number }>();
  private total = 0;

  constructor(private readonly limits: McpValueLimits = MCP_VALUE_LIMITS) {}

  get(logicalId: string): HeldMcpValues | undefined {
    return this.bySession.get(logicalId)?.values;
  }

  /** The bytes held for all sessions together. */
  get totalBytes(): number {
    return this.total;
  }

  /**
   * Holds (or replaces) the values of the servers given; the session's other servers keep theirs.
   * Past a limit it holds nothing and refuses with invalid_params (details.limit names which).
   */
  hold(logicalId: string, values: HeldMcpValues): void {
    if (Object.keys(values).length === 0) return;
    const before = this.bySession.get(logicalId);
    const merged = { ...before?.values, ...values };
    const bytes = heldBytes(merged);
    const total = this.total - (before?.bytes ?? 0) + bytes;
    if (bytes > this.limits.sessionBytes)
      throw new GatewayError(
        'invalid_params',
        `the env and header values of this session's own MCP servers would take ${bytes} bytes, more than the ${this.limits.sessionBytes} a session may hold (limits.mcp_values_max_bytes); nothing was held`,
        { field: 'mcp_servers', limit: 'mcp_values_max_bytes', bytes, max_bytes: this.limits.sessionBytes },
      );
    if (total > this.limits.totalBytes)
      throw new GatewayError(
        'invalid_params',
        `the MCP server values the gateway holds for all its sessions would pass the ${this.limits.totalBytes} bytes it may hold (limits.mcp_values_total_max_bytes); nothing was held: try again once sessions are deleted, or ask the operator to raise the limit`,
        { field: 'mcp_servers', limit: 'mcp_values_total_max_bytes', max_bytes: this.limits.totalBytes },
      );
    this.bySession.set(logicalId, { values: merged, bytes });
    this.total = total;
  }

  /** A fork or a delegation's child: the values of the servers it took over from `from`. */
  copy(from: string, to: string, servers: McpServersConfig): void {
    this.hold(to, heldFor(this.get(from), servers));
  }

  forget(logicalId: string): void {
    this.total -= this.bySession.get(logicalId)?.bytes ?? 0;
    this.bySession.delete(logicalId);
  }
}

/** Why a supplied server is not the session's own: the first difference, or null when it is. */
export function supplyMismatch(
  stored: McpServersConfig,
  given: McpServersConfig,
): { server: string; message: string } | null {
  for (const [name, server] of Object.entries(given)) {
    const own = stored[name];
    if (!own) {
      const names = Object.keys(stored);
      return {
        server: name,
        message: `this session has no MCP server "${name}" of its own${names.length > 0 ? ` (it has ${names.join(', ')})` : ''}: a session's servers are fixed when it is created`,
      };
    }
    if (canonicalJson(withoutValues(server)) !== canonicalJson(own))
      return {
        server: name,
        message: `the MCP server "${name}" is not the one this session was created with (its command, args, url, cwd, settings or the names of its env or headers differ): a session's servers are fixed when it is created; give it as it was, or create a new session`,
      };
  }
  return null;
}

/**
 * session.mcp.supply, once the caller may: holds the values of the given servers, all of them or
 * none (a server that is not the session's own refuses the call). Answers which of the session's
 * servers still wait for theirs.
 */
export function supplyMcpValues(
  values: McpValueStore,
  logicalId: string,
  own: McpServersConfig,
  given: McpServersConfig,
): { session_id: string; supplied: string[]; unsupplied: string[] } {
  const mismatch = supplyMismatch(own, given);
  if (mismatch)
    throw new GatewayError('mcp_servers_mismatch', mismatch.message, {
      session_id: logicalId,
      server: mismatch.server,
    });
  values.hold(logicalId, heldValuesOf(given));
  return {
    session_id: logicalId,
    supplied: Object.keys(given),
    unsupplied: unsuppliedOf(own, values.get(logicalId)),
  };
}
