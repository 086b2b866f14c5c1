/**
 * One live connection to one MCP server, on the official SDK (loaded by dynamic import the first
 * time a server is started, so a gateway without MCP servers never loads it).
 *
 * A small state machine:
 *   idle      never started, or stopped after failing too often: the next use starts it
 *   starting  the process is spawned (or the endpoint reached) and `initialize` is under way
 *   ready     tools listed, calls answered
 *   backoff   it died or failed to start: it is started again after a delay that doubles with each
 *             failure in a row (1 s … 60 s); a use meanwhile waits for that start
 *   stopped   closed with the gateway: every use is refused
 * Every way it can fail ends in a sentence (`lastError`) that a tool result quotes; nothing waits
 * longer than the server's `timeout_s`.
 *
 * Every stdio process it spawned is held until it has exited, and `stop()` ends with none left: the
 * SDK's own close (stdin closed, SIGTERM after 2 s, SIGKILL after 2 s more) runs on unref'd timers
 * and may still be under way when the gateway stops (a failed start's close, an idle close), and
 * the process would outlive the gateway if nothing waited for it.
 */
import { ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isStdio, MCP_TIMEOUT_DEFAULT_S, type McpServerConfig } from './config.js';

/** One tool as the server lists it (the parts the gateway uses). */
export interface McpListedTool {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean | undefined } | undefined;
}

/** What a call returned, flattened for a tool result. */
export interface McpCallResult {
  text: string;
  isError: boolean;
}

/** How a stdio server is launched: the command line and environment, after isolation is applied. */
export interface McpLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Called once the process is gone (an isolated server's directory and cgroup are removed). */
  release?(): void;
}

export interface McpConnectionOptions {
  name: string;
  config: McpServerConfig;
  /** The stdio launch (isolation, environment); unused for an HTTP server. */
  launch(): McpLaunch;
  log?: (level: 'info' | 'warn', message: string) => void;
}

/** Failed starts in a row after which it waits to be used again instead of retrying by itself. */
const MAX_AUTO_RESTARTS = 5;
const BACKOFF_FIRST_MS = 1000;
const BACKOFF_MAX_MS = 60_000;
/** How much of a server's stderr is kept to explain why it died. */
const STDERR_TAIL = 2048;
/** A stopped server's time to exit after its stdin closes, then after SIGTERM (as the SDK's close). */
const EXIT_GRACE_MS = 2000;

export class McpUnavailableError extends Error {}
/** The server wrote something that is not MCP; the message says so in full. */
class McpGarbageError extends Error {}

export type McpState = 'idle' | 'starting' | 'ready' | 'backoff' | 'stopped';

export class McpConnection {
  state: McpState = 'idle';
  /** Why it is not ready, in one sentence (the last failure); null while it never failed. */
  lastError: string | null = null;
  /** The tools of the last successful listing (kept while it restarts). */
  tools: McpListedTool[] | null = null;
  private client: Client | null = null;
  private transport: Transport | null = null;
  private starting: Promise<void> | null = null;
  private failures = 0;
  private restartAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private stderr = '';
  /** The stdio processes spawned and not yet exited (while one is held, its pid is not reused). */
  private readonly processes = new Set<ChildProcess>();
  /** Set when the connection is closed on purpose (a stop, garbage): the reason calls are told. */
  private closing: string | null = null;
  private readyAt = 0;
  /** Calls in flight (an idle sweep never stops a server that is answering). */
  busy = 0;
  /** When a call last ended (or started), for the idle sweep. */
  lastActive = Date.now();

  constructor(private readonly options: McpConnectionOptions) {}

  get name(): string {
    return this.options.name;
  }

  get timeoutMs(): number {
    return (this.options.config.timeout_s ?? MCP_TIMEOUT_DEFAULT_S) * 1000;
  }

  /** The pid of a running stdio server (tests kill it), or null. */
  get pid(): number | null {
    const transport = this.transport as { pid?: number | null } | null;
    return transport?.pid ?? null;
  }

  /** Ready to answer: starts it (or waits for the start under way) within `timeout_s`. */
  async ready(): Promise<Client> {
    if (this.state === 'stopped')
      throw new McpUnavailableError(`MCP server "${this.options.name}" was stopped with the gateway`);
    if (this.state === 'ready' && this.client) return this.client;
    if (this.state === 'backoff' && !this.starting) {
      const wait = this.restartAt - Date.now();
      if (wait > this.timeoutMs)
        throw new McpUnavailableError(
          `${this.describeFailure()}; it is started again in ${Math.ceil(wait / 1000)} s`,
        );
      clearTimeout(this.timer);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    this.starting ??= this.start();
    await this.starting;
    if (this.state !== 'ready' || !this.client) throw new McpUnavailableError(this.describeFailure());
    return this.client;
  }

  /** The server's tools (listing once per start). */
  async listTools(): Promise<McpListedTool[]> {
    await this.ready();
    return this.tools ?? [];
  }

  async call(
    tool: string,
    args: Record<string, unknown>,
    options: {
      signal: AbortSignal;
      onProgress?: (progress: number, total: number | undefined, message: string | undefined) => void;
    },
  ): Promise<McpCallResult> {
    const client = await this.ready();
    this.busy++;
    this.lastActive = Date.now();
    const result = await client
      .callTool({ name: tool, arguments: args }, undefined, {
        signal: options.signal,
        timeout: this.timeoutMs,
        resetTimeoutOnProgress: true,
        ...(options.onProgress
          ? {
              onprogress: (p: { progress: number; total?: number; message?: string }) =>
                options.onProgress!(p.progress, p.total, p.message),
            }
          : {}),
      })
      .finally(() => {
        this.busy--;
        this.lastActive = Date.now();
      });
    return flatten(result);
  }

  /** The sentence a failed use is told. */
  describeFailure(): string {
    return `MCP server "${this.options.name}" is not available: ${this.lastError ?? 'it is not running'}`;
  }

  /** Stops it for good (the gateway stops): resolves once no process it spawned is left. */
  async stop(): Promise<void> {
    this.state = 'stopped';
    clearTimeout(this.timer);
    await this.close('was stopped with the gateway');
    await Promise.all([...this.processes].map(endProcess));
  }

  private async start(): Promise<void> {
    this.state = 'starting';
    this.closing = null;
    this.stderr = '';
    let release: (() => void) | undefined;
    try {
      const transport = await this.openTransport((r) => (release = r));
      const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
      const client = new Client({ name: 'gatehouse', version: '1' }, { capabilities: {} });
      // Anything the server sends that is not MCP fails what waits for it, at once.
      let garbage: ((error: Error) => void) | null = null;
      const garbled = new Promise<never>((_, reject) => (garbage = reject));
      garbled.catch(() => undefined);
      client.onerror = (error) => {
        if (!isGarbage(error)) return;
        const why = `it answered something that is not MCP (${oneLine(error)})`;
        if (this.state === 'starting') garbage?.(new McpGarbageError(why));
        else void this.close(why);
      };
      client.onclose = () => this.closed(release);
      this.client = client;
      this.transport = transport;
      await Promise.race([client.connect(transport, { timeout: this.timeoutMs }), garbled]);
      const listed = await Promise.race([this.listAll(client), garbled]);
      this.tools = listed;
      this.state = 'ready';
      this.readyAt = Date.now();
      this.lastError = null;
      this.options.log?.('info', `MCP server "${this.options.name}" started with ${listed.length} tools`);
    } catch (error) {
      this.lastError = this.closing ?? this.withStderr(startFailure(error));
      this.options.log?.('warn', `MCP server "${this.options.name}" failed to start: ${this.lastError}`);
      const client = this.client;
      this.client = null;
      this.transport = null;
      // Closing fires onclose, which must not count this failure twice.
      if (client) {
        client.onclose = undefined;
        await client.close().catch(() => undefined);
      }
      release?.();
      if ((this.state as McpState) !== 'stopped') this.scheduleRestart();
    } finally {
      this.starting = null;
    }
  }

  private async listAll(client: Client): Promise<McpListedTool[]> {
    const tools: McpListedTool[] = [];
    let cursor: string | undefined;
    // Bounded: a server that pages forever is not listed forever.
    for (let page = 0; page < 50; page++) {
      const result = await client.listTools(cursor ? { cursor } : {}, { timeout: this.timeoutMs });
      tools.push(...(result.tools as McpListedTool[]));
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    return tools;
  }

  private async openTransport(onRelease: (release: () => void) => void): Promise<Transport> {
    const config = this.options.config;
    if (!isStdio(config)) {
      const { StreamableHTTPClientTransport } =
        await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
      return new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: config.headers },
      });
    }
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const launch = this.options.launch();
    if (launch.release) onRelease(() => launch.release?.());
    const transport = new StdioClientTransport({
      command: launch.command,
      args: launch.args,
      env: launch.env,
      cwd: launch.cwd,
      stderr: 'pipe',
    });
    // The SDK spawns in start() (called by connect) and forgets the process as soon as its close
    // begins; the process is held here from its spawn until it exits.
    const start = transport.start.bind(transport);
    transport.start = () => {
      if (this.state === 'stopped')
        return Promise.reject(new Error(`MCP server "${this.options.name}" was stopped with the gateway`));
      const started = start();
      this.hold((transport as unknown as { _process?: unknown })._process);
      return started;
    };
    (transport.stderr as Readable | null)?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_TAIL);
    });
    return transport;
  }

  private hold(child: unknown): void {
    if (!(child instanceof ChildProcess) || exited(child)) return;
    this.processes.add(child);
    const forget = () => this.processes.delete(child);
    child.once('exit', forget);
    child.once('error', () => {
      if (exited(child)) forget(); // never spawned (ENOENT): no exit follows
    });
  }

  /** The transport closed: on purpose, or the server died. */
  private closed(release: (() => void) | undefined): void {
    release?.();
    if (this.state === 'starting') return; // start() reports it
    this.client = null;
    this.transport = null;
    if (this.state === 'stopped') return;
    this.lastError = this.closing ?? this.withStderr('its process ended');
    this.options.log?.('warn', `MCP server "${this.options.name}" stopped: ${this.lastError}`);
    // A server that ran a while before it died starts over from the shortest delay.
    if (Date.now() - this.readyAt > BACKOFF_MAX_MS) this.failures = 0;
    this.scheduleRestart();
  }

  private async close(why: string): Promise<void> {
    this.closing ??= why;
    const client = this.client;
    if (client) await client.close().catch(() => undefined);
  }

  private scheduleRestart(): void {
    this.failures++;
    this.state = 'backoff';
    const delay = Math.min(BACKOFF_FIRST_MS * 2 ** (this.failures - 1), BACKOFF_MAX_MS);
    this.restartAt = Date.now() + delay;
    clearTimeout(this.timer);
    if (this.failures > MAX_AUTO_RESTARTS) return; // the next use starts it
    this.timer = setTimeout(() => {
      if (this.state === 'backoff' && !this.starting) this.starting = this.start();
    }, delay);
    this.timer.unref();
  }

  private withStderr(what: string): string {
    const line = this.stderr.trim().split('\n').at(-1)?.trim();
    return line ? `${what} (its last words: ${line.slice(0, 300)})` : what;
  }
}

function exited(child: ChildProcess): boolean {
  return child.pid === undefined || child.exitCode !== null || child.signalCode !== null;
}

/**
 * Ends a process as the SDK's close does (stdin closed, SIGTERM, SIGKILL), on timers that keep the
 * gateway alive until it has exited. `kill` signals only a process Node has not yet reaped, so a
 * reused pid is never signalled.
 */
async function endProcess(child: ChildProcess): Promise<void> {
  const exit = new Promise<void>((resolve) => {
    if (exited(child)) resolve();
    else child.once('exit', () => resolve());
  });
  const within = async (ms: number): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exit, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  };
  child.stdin?.end();
  await within(EXIT_GRACE_MS);
  if (exited(child)) return;
  child.kill('SIGTERM');
  await within(EXIT_GRACE_MS);
  if (exited(child)) return;
  child.kill('SIGKILL');
  await within(EXIT_GRACE_MS);
}

/** JSON that did not parse, or a message that is not JSON-RPC. */
function isGarbage(error: Error): boolean {
  return error instanceof SyntaxError || error.name === 'ZodError' || /JSON|parse/i.test(error.message);
}

function startFailure(error: unknown): string {
  if (error instanceof McpGarbageError) return error.message;
  const code = (error as NodeJS.ErrnoException)?.code;
  if (code === 'ENOENT') return `its command was not found (${oneLine(error)})`;
  if (code === 'EACCES') return `its command may not be run (${oneLine(error)})`;
  const message = oneLine(error);
  if (/timed out|timeout/i.test(message)) return `it did not answer in time (${message})`;
  if (/Connection closed/i.test(message)) return `it ended before it answered (${message})`;
  return `it could not be started (${message})`;
}

export function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s+/g, ' ').trim().slice(0, 500);
}

/** A call's content as text: text parts as they are, other parts named, structured content as JSON. */
function flatten(result: {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
  toolResult?: unknown;
}): McpCallResult {
  const parts: string[] = [];
  const content = Array.isArray(result.content)
    ? (result.content as {
        type?: unknown;
        text?: unknown;
        mimeType?: unknown;
        uri?: unknown;
        resource?: { uri?: unknown; text?: unknown };
      }[])
    : [];
  for (const part of content) {
    if (part.type === 'text' && typeof part.text === 'string') parts.push(part.text);
    else if (part.type === 'image' || part.type === 'audio')
      parts.push(
        `[${String(part.type)} ${typeof part.mimeType === 'string' ? part.mimeType : ''}: not shown to the model]`,
      );
    else if (part.type === 'resource_link') parts.push(`[resource link: ${String(part.uri)}]`);
    else if (part.type === 'resource' && part.resource)
      parts.push(
        typeof part.resource.text === 'string'
          ? part.resource.text
          : `[resource: ${String(part.resource.uri)}]`,
      );
  }
  if (parts.length === 0 && result.structuredContent !== undefined)
    parts.push(JSON.stringify(result.structuredContent));
  if (parts.length === 0 && result.toolResult !== undefined) parts.push(JSON.stringify(result.toolResult));
  return { text: parts.length > 0 ? parts.join('\n') : '(no output)', isError: result.isError === true };
}
