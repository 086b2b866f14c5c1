/**
 * The values of a session's own MCP servers (issue 27, docs/decisions.md "Session MCP server values
 * in memory only"): a client's `env` (stdio) and `headers` (Streamable HTTP) carry API keys and
 * bearer tokens, so the store keeps their names only and the values are held in the daemon's
 * memory, as a session's api_key is (LOC-5). After a restart the client supplies them again
 * (`session.mcp.supply`, ACP's session/load, or session.create repeated with its request_id); until
 * then the server is never started, and its stand-in tool says why.
 *
 * values      The env or header values of one server, by name.
 * held        What a daemon holds of one session: each own server's values, by server name.
 * unsupplied  An own server whose values are needed (it names some) and not held.
 *
 * Pure: no I/O, so every rule is testable without a daemon.
 */
import { isStdio, type McpServerConfig, type McpServersConfig } from './config.js';

export type McpValues = Readonly<Record<string, string>>;
export type HeldMcpValues = Readonly<Record<string, McpValues>>;

/** What the store keeps of a value: its name says it is there, the value never is. */
const NOT_STORED = '';

/** The server's env values (stdio) or header values (HTTP): the part held in memory only. */
export function valuesOf(server: McpServerConfig): McpValues {
  return isStdio(server) ? server.env : server.headers;
}

/** Whether the server needs values to start: it names some env variable or header. */
export function needsValues(server: McpServerConfig): boolean {
  return Object.keys(valuesOf(server)).length > 0;
}

/** The server as it is stored: every env and header value left out, the names kept. */
export function withoutValues(server: McpServerConfig): McpServerConfig {
  const blank = Object.fromEntries(Object.keys(valuesOf(server)).map((name) => [name, NOT_STORED]));
  return isStdio(server) ? { ...server, env: blank } : { ...server, headers: blank };
}

function withValues(server: McpServerConfig, values: McpValues): McpServerConfig {
  return isStdio(server) ? { ...server, env: { ...values } } : { ...server, headers: { ...values } };
}

/** The values of the servers that name some, by server name (empty: nothing to hold). */
export function heldValuesOf(servers: Readonly<Record<string, McpServerConfig>>): HeldMcpValues {
  const held: Record<string, McpValues> = {};
  for (const [name, server] of Object.entries(servers))
    if (needsValues(server)) held[name] = valuesOf(server);
  return held;
}

/** Held values narrowed to the servers `servers` has (a fork or a child keeps its parent's). */
export function heldFor(held: HeldMcpValues | undefined, servers: McpServersConfig): HeldMcpValues {
  const out: Record<string, McpValues> = {};
  for (const name of Object.keys(servers)) if (held?.[name]) out[name] = held[name];
  return out;
}

/** The own servers of a policy with the held values put back, and those still unsupplied. */
export function resolveOwn(
  own: McpServersConfig,
  held: HeldMcpValues | undefined,
): { own: McpServersConfig; unsupplied: string[] } {
  const resolved: Record<string, McpServerConfig> = {};
  const unsupplied: string[] = [];
  for (const [name, server] of Object.entries(own)) {
    // A server left disabled is never started: it needs nothing.
    if (!needsValues(server) || !server.enabled) resolved[name] = server;
    else if (held?.[name]) resolved[name] = withValues(server, held[name]);
    else unsupplied.push(name);
  }
  return { own: resolved, unsupplied };
}

/** The own servers that need values this daemon does not hold. */
export function unsuppliedOf(own: McpServersConfig, held: HeldMcpValues | undefined): string[] {
  return resolveOwn(own, held).unsupplied;
}
