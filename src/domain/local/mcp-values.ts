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

export class McpValueStore {
  private readonly bySession = new Map<string, HeldMcpValues>();

  get(logicalId: string): HeldMcpValues | undefined {
    return this.bySession.get(logicalId);
  }

  /** Holds (or replaces) the values of the servers given; the session's other servers keep theirs. */
  hold(logicalId: string, values: HeldMcpValues): void {
    if (Object.keys(values).length === 0) return;
    this.bySession.set(logicalId, { ...this.bySession.get(logicalId), ...values });
  }

  /** A fork or a delegation's child: the values of the servers it took over from `from`. */
  copy(from: string, to: string, servers: McpServersConfig): void {
    this.hold(to, heldFor(this.bySession.get(from), servers));
  }

  forget(logicalId: string): void {
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
