/**
 * What a session is given that is never stored (LOC-5): its api_key and the values of its own MCP
 * servers' env and headers (mcp-values.ts), held in this daemon's memory only, and
 * `session.mcp.supply`, which gives the MCP values again after a restart lost them. In a cluster the
 * instance holding them runs the session's turns: it takes the session's lease when given them.
 */
import type { McpServersConfig } from '../../runtime/mcp/config.js';
import type { SessionMcpServers } from '../../runtime/mcp/pool.js';
import { resolveOwn } from '../../runtime/mcp/values.js';
import { isOperator, type Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import { isOwner, type AccessRow } from './access.js';
import { refusePaused } from './inputs.js';
import { McpValueStore, supplyMcpValues, type McpValueLimits } from './mcp-values.js';
import type { CreationReceipt } from './receipt.js';
import type { SessionOwnership } from './scheduler.js';

export interface SessionSecretsDeps {
  /** Bytes of own MCP server values held per session and in all; absent: MCP_VALUE_LIMITS. */
  limits?: McpValueLimits;
  /** The session if the principal may use it (access-cache.ts). */
  access: (principal: Principal, logicalId: string) => Promise<AccessRow>;
  /** The session's receipt, validated in this epoch first if it was not yet. */
  receipt: (logicalId: string) => Promise<CreationReceipt | null>;
  /** Refuses with runtime_draining while the daemon drains. */
  assertAccepting: () => void;
  /** In a cluster: which sessions this instance may run; absent: all of them. */
  ownership?: SessionOwnership;
}

export class SessionSecrets {
  /** LOC-5: each session's api_key, by logical id. */
  readonly apiKeys = new Map<string, string>();
  /** The own MCP servers' env and header values, by logical id. */
  readonly mcpValues: McpValueStore;

  constructor(private readonly deps: SessionSecretsDeps) {
    this.mcpValues = new McpValueStore(deps.limits);
  }

  apiKey(logicalId: string): string | undefined {
    return this.apiKeys.get(logicalId);
  }

  /** The sessions whose api_key this instance holds. */
  keyedSessions(): Iterable<string> {
    return this.apiKeys.keys();
  }

  /** The session's own MCP servers with the values held here put back, and those still waiting. */
  mcpServersOf(logicalId: string, servers: SessionMcpServers): SessionMcpServers {
    const { own, unsupplied } = resolveOwn(servers.own, this.mcpValues.get(logicalId));
    return { ...servers, own, unsupplied };
  }

  /** Drops everything held for a session (deleted, or gone from this instance). */
  forget(logicalId: string): void {
    this.apiKeys.delete(logicalId);
    this.mcpValues.forget(logicalId);
  }

  /**
   * session.mcp.supply: the creator (or an operator) gives the values of the session's own MCP
   * servers again, after a restart lost them; a server not the session's own refuses the call.
   */
  async supply(
    principal: Principal,
    params: { session_id: string; mcp_servers: McpServersConfig },
  ): Promise<Record<string, unknown>> {
    this.deps.assertAccepting();
    const session = await this.deps.access(principal, params.session_id);
    if (!isOwner(principal, session) && !isOperator(principal))
      throw new GatewayError(
        'permission_denied',
        `only the creator of session ${session.logical_id} (or an operator) may give its MCP servers' values`,
        { session_id: session.logical_id },
      );
    refusePaused(session);
    const receipt = await this.deps.receipt(session.logical_id);
    if (!receipt) throw new Error(`session ${session.logical_id} has no validated receipt`);
    const own = receipt.policy.mcp_servers?.own ?? {};
    const answer = supplyMcpValues(this.mcpValues, session.logical_id, own, params.mcp_servers);
    // In a cluster the values live only here: the session's turns must run here (as for an api_key).
    await this.deps.ownership?.acquire(session.logical_id);
    return answer;
  }
}
