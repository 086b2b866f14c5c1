/**
 * The daemon's MCP servers: one connection per server and place it runs, shared by the sessions
 * that use the same server the same way (a `safe_mode` session's stdio servers are its own, inside
 * its isolation), started lazily when a turn first needs its tools, closed when unused for a while
 * and when the gateway stops.
 */
import { createHash } from 'node:crypto';
import type { ToolDefinition } from '../types.js';
import { isStdio, type McpServerConfig, type McpServersConfig } from './config.js';
import { McpConnection, type McpLaunch } from './connection.js';
import { serverTools, unavailableTool } from './tools.js';

/**
 * What a session's policy froze: the profile's servers by name, and its own in full (as stored,
 * without their env and header values: values.ts).
 */
export interface SessionMcpServers {
  profile: string[];
  own: McpServersConfig;
  /** Own servers whose values this daemon does not hold (values.ts): never started. */
  unsupplied?: string[];
}

/** What the stand-in tool of an own server whose values were not supplied again says. */
export const UNSUPPLIED_REASON =
  "its env or header values are held only in the gateway's memory and were not supplied since it started: the client that created the session supplies them again (session.mcp.supply, or ACP's session/load with its mcpServers)";

export interface McpScope {
  sessionId: string;
  cwd: string;
  /** The session runs in safe mode: its stdio servers run in its isolation. */
  safe: boolean;
}

export interface McpPoolOptions {
  /** The profile's `mcp_servers:` (read at each turn, so a reload is seen). */
  profileServers(): McpServersConfig;
  /** The tool environment (docs/tool-reach.md) a normal session's stdio servers get. */
  env: Readonly<Record<string, string>>;
  /** The launch of a safe-mode session's stdio server, inside its isolation. */
  isolate?(sessionId: string, launch: McpLaunch, serverEnv: Readonly<Record<string, string>>): McpLaunch;
  /** A connection unused this long is closed (its process stopped). */
  idleMs?: number;
  log?: (level: 'info' | 'warn', message: string) => void;
}

const IDLE_DEFAULT_MS = 10 * 60_000;

interface Entry {
  connection: McpConnection;
  lastUsed: number;
}

export class McpPool {
  private readonly connections = new Map<string, Entry>();
  /** Idle connections whose stop is under way: the gateway's stop waits for them too. */
  private readonly stopping = new Set<Promise<void>>();
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: McpPoolOptions) {
    const idle = options.idleMs ?? IDLE_DEFAULT_MS;
    this.sweeper = setInterval(() => this.sweep(idle), Math.min(idle, 60_000));
    this.sweeper.unref();
  }

  /** Whether a policy names any server at all (a gateway without them never loads the SDK). */
  static any(servers: SessionMcpServers | undefined): boolean {
    return (
      !!servers &&
      (servers.profile.length > 0 ||
        Object.keys(servers.own).length > 0 ||
        (servers.unsupplied ?? []).length > 0)
    );
  }

  /**
   * The session's MCP tools, in the order its servers were named: each server started (or its start
   * awaited) within its `timeout_s`. A server that cannot be listed is there as one stand-in tool
   * that says why, so neither the model nor the user is left guessing, and the turn goes on.
   */
  async tools(servers: SessionMcpServers, scope: McpScope): Promise<ToolDefinition[]> {
    // A server, or why it is not there.
    const wanted: [string, McpServerConfig | string][] = [];
    const profile = this.options.profileServers();
    for (const name of servers.profile) {
      if (name in servers.own || servers.unsupplied?.includes(name)) continue;
      const config = profile[name];
      wanted.push([
        name,
        config && config.enabled ? config : 'it is no longer configured (mcp_servers in config.yaml)',
      ]);
    }
    for (const [name, config] of Object.entries(servers.own)) if (config.enabled) wanted.push([name, config]);
    for (const name of servers.unsupplied ?? []) wanted.push([name, UNSUPPLIED_REASON]);
    const lists = await Promise.all(
      wanted.map(async ([name, config]): Promise<ToolDefinition[]> => {
        if (typeof config === 'string') return [unavailableTool(name, config, null)];
        const connection = this.connection(name, config, scope);
        try {
          return serverTools(name, config, await connection.listTools(), connection);
        } catch {
          return [unavailableTool(name, connection.lastError ?? 'it could not be started', connection)];
        }
      }),
    );
    return lists.flat();
  }

  /** The live connection of a server for a scope (tests find a server's pid through it). */
  connection(name: string, config: McpServerConfig, scope: McpScope): McpConnection {
    if (this.closed) throw new Error('the MCP servers were stopped with the gateway');
    const isolated = scope.safe && isStdio(config);
    const cwd = isStdio(config) ? (config.cwd ?? scope.cwd) : '';
    const key = createHash('sha256')
      .update(JSON.stringify([name, config, cwd, isolated ? scope.sessionId : null]))
      .digest('hex');
    let entry = this.connections.get(key);
    if (!entry) {
      const connection = new McpConnection({
        name,
        config,
        launch: () => this.launch(config, cwd, isolated ? scope.sessionId : null),
        ...(this.options.log ? { log: this.options.log } : {}),
      });
      entry = { connection, lastUsed: Date.now() };
      this.connections.set(key, entry);
    }
    entry.lastUsed = Date.now();
    return entry.connection;
  }

  /** Running stdio servers' pids by server name (tests kill one mid-call). */
  pids(): Record<string, number[]> {
    const out: Record<string, number[]> = {};
    for (const { connection } of this.connections.values()) {
      const pid = connection.pid;
      if (pid !== null) (out[connection.name] ??= []).push(pid);
    }
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    const all = [...this.connections.values()];
    this.connections.clear();
    await Promise.all([...all.map((e) => e.connection.stop()), ...this.stopping]);
  }

  private launch(config: McpServerConfig, cwd: string, isolatedFor: string | null): McpLaunch {
    if (!isStdio(config)) throw new Error('not a stdio server');
    const launch: McpLaunch = {
      command: config.command,
      args: [...config.args],
      env: { ...this.options.env, ...config.env },
      cwd,
    };
    if (isolatedFor === null) return launch;
    if (!this.options.isolate) throw new Error('safe mode is not available to MCP servers here');
    return this.options.isolate(isolatedFor, launch, config.env);
  }

  private sweep(idleMs: number): void {
    const now = Date.now();
    for (const [key, entry] of this.connections) {
      const last = Math.max(entry.lastUsed, entry.connection.lastActive);
      if (now - last < idleMs || entry.connection.busy > 0) continue;
      this.connections.delete(key);
      const stopped = entry.connection.stop().finally(() => this.stopping.delete(stopped));
      this.stopping.add(stopped);
    }
  }
}
