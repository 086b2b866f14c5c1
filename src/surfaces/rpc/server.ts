/**
 * The RPC listener: node:http for the dashboard routes, `ws` (noServer) for `/api/ws`. Every
 * upgrade passes the gate (gate.ts) before a WebSocket exists; the principal it stamps is fixed
 * for the life of the connection (AUTH-1).
 */
import { createServer, STATUS_CODES, type IncomingMessage, type RequestListener } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { LoginLimiter, type LoginLimits } from '../../domain/auth/login-limiter.js';
import { DashboardLogins, type LoginStore } from '../../domain/auth/logins.js';
import type { TicketBook } from '../../domain/auth/tickets.js';
import type { Dispatcher } from '../../protocol/dispatcher.js';
import { HttpRejection } from '../../protocol/errors.js';
import { silentLogger, type Logger } from '../../protocol/logger.js';
import {
  DEFAULT_CONNECTION_LIMITS,
  ViewerConnection,
  type ConnectionLimits,
  type RpcContext,
} from './connection.js';
import { TypedEmitter, type RpcSurfaceEvents } from './events.js';
import {
  authenticateUpgrade,
  isLoopbackHost,
  parseCookies,
  parseSubprotocols,
  SUBPROTOCOL,
  type GateConfig,
  type RequestFacts,
} from './gate.js';
import { routeHttp, type StaticHandler } from './http-routes.js';
import type { MetricsRoute } from './metrics-route.js';

export const WS_PATH = '/api/ws';
/** Frames above this size are refused by `ws` itself (close 1009) before any parsing. */
const MAX_FRAME_BYTES = 1024 * 1024;

export interface RpcServerOptions {
  host?: string;
  port?: number;
  dispatcher: Dispatcher<RpcContext>;
  tickets: TicketBook;
  /** The profile principals stamped here belong to. */
  profile?: string;
  dashboard?: { passwordHash: string | null };
  legacyToken?: { enabled: boolean; token: string } | null;
  /**
   * A random secret generated per daemon process and handed only to clients the daemon spawns
   * (never written to disk). They present it as the subprotocol `gatehouse-internal.<secret>`.
   */
  internalCredential?: string | null;
  allowedOrigins?: readonly string[];
  /** Accept non-loopback peers and binds. Only with `tls` or `trustedProxies` (AUTH-6). */
  allowRemote?: boolean;
  /** The authenticating proxy's addresses: the only remote peers accepted (AUTH-6). */
  trustedProxies?: readonly string[];
  logger?: Logger;
  limits?: Partial<ConnectionLimits>;
  /** Hook for the dashboard's static files, tried for requests no route owns. */
  staticFiles?: StaticHandler;
  /** Extra fields of GET /healthz. */
  health?: () => Record<string, unknown>;
  /** GET /metrics (metrics-route.ts); absent when `metrics.enabled` is off. */
  metrics?: MetricsRoute | null;
  /** Serve HTTPS and WSS with this certificate and key (PEM). */
  tls?: { cert: Buffer; key: Buffer } | null;
  /** Bounds on dashboard password attempts; the defaults suit every deployment we know. */
  loginLimits?: LoginLimits;
  /** Keeps dashboard logins across restarts (hashes only); absent: they end with the process. */
  loginStore?: LoginStore | null;
  /** Clock for login expiry and throttling; tickets carry their own. */
  now?: () => number;
}

export interface RpcServer {
  readonly url: string;
  readonly port: number;
  readonly connections: ReadonlySet<ViewerConnection>;
  readonly events: TypedEmitter<RpcSurfaceEvents>;
  /** Exposed for tests and debug views: holds hashes only. */
  readonly logins: DashboardLogins;
  close(): Promise<void>;
}

export class RemoteBindRefusedError extends Error {
  constructor(host: string, allowRemote: boolean) {
    super(
      allowRemote
        ? `refusing to listen on ${host} without TLS or an authenticating proxy: give tls ` +
            '(listener.tls.cert and listener.tls.key) or trustedProxies (listener.trusted_proxy).'
        : `refusing to listen on ${host}: it is not a loopback address. Set allowRemote (listener.allow_remote) ` +
            'only when the listener sits behind TLS or an authenticating proxy.',
    );
    this.name = 'RemoteBindRefusedError';
  }
}

/** Config errors surface at start, not as a crash on the first browser request. */
function normalizeOrigin(origin: string): string {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    throw new Error(`allowed origin ${JSON.stringify(origin)} is not a URL like http://host:port`);
  }
  if (parsed.origin === 'null' || parsed.origin !== origin.replace(/\/$/, '')) {
    throw new Error(`allowed origin ${JSON.stringify(origin)} must be scheme://host[:port] only`);
  }
  return parsed.origin;
}

function factsOf(req: IncomingMessage): RequestFacts {
  const url = new URL(req.url ?? '/', 'http://localhost');
  return {
    remoteAddress: req.socket.remoteAddress,
    host: req.headers.host,
    origin: req.headers.origin,
    subprotocols: parseSubprotocols(req.headers['sec-websocket-protocol']),
    query: url.searchParams,
    cookies: parseCookies(req.headers.cookie),
  };
}

function rejectUpgrade(socket: Duplex, rejection: HttpRejection): void {
  const body = JSON.stringify(rejection.body());
  socket.on('error', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${rejection.status} ${STATUS_CODES[rejection.status] ?? ''}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

export async function startRpcServer(options: RpcServerOptions): Promise<RpcServer> {
  const host = options.host ?? '127.0.0.1';
  const allowRemote = options.allowRemote ?? false;
  const trustedProxies = options.trustedProxies ?? [];
  if (!isLoopbackHost(host) && (!allowRemote || (!options.tls && trustedProxies.length === 0))) {
    throw new RemoteBindRefusedError(host, allowRemote);
  }
  const logger = options.logger ?? silentLogger;
  const now = options.now ?? Date.now;
  const limits = { ...DEFAULT_CONNECTION_LIMITS, ...options.limits };
  const config: GateConfig = {
    allowRemote,
    trustedProxies,
    allowedOrigins: (options.allowedOrigins ?? []).map(normalizeOrigin),
    profile: options.profile ?? 'default',
    legacyToken: options.legacyToken ?? null,
    internalCredential: options.internalCredential ?? null,
  };
  const logins = new DashboardLogins(now, undefined, options.loginStore ?? null);
  const routeDeps = {
    config,
    tickets: options.tickets,
    logins,
    limiter: new LoginLimiter(now, options.loginLimits),
    passwordHash: options.dashboard?.passwordHash ?? null,
    staticFiles: options.staticFiles,
    health: options.health,
    metrics: options.metrics ?? null,
    logger,
  };
  const events = new TypedEmitter<RpcSurfaceEvents>();
  const connections = new Set<ViewerConnection>();
  events.on('connection:close', (connection) => connections.delete(connection));

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_FRAME_BYTES,
    // Only ever answer our own protocol name: the ticket entry must never be echoed back.
    handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
  });

  const listener: RequestListener = (req, res) => {
    void routeHttp(req, res, factsOf(req), routeDeps);
  };
  const server = options.tls ? createTlsServer(options.tls, listener) : createServer(listener);

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    try {
      upgrade(req, socket, head);
    } catch (error) {
      logger.error({ err: error }, 'upgrade failed');
      rejectUpgrade(socket, new HttpRejection('internal_error'));
    }
  });

  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== WS_PATH) return rejectUpgrade(socket, new HttpRejection('not_found'));
    const outcome = authenticateUpgrade(factsOf(req), config, { tickets: options.tickets, logins });
    if (outcome instanceof HttpRejection) {
      logger.warn({ reason: outcome.reason, peer: req.socket.remoteAddress }, 'upgrade refused');
      return rejectUpgrade(socket, outcome);
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const connection = new ViewerConnection(
        ws,
        outcome,
        options.dispatcher,
        events,
        logger,
        limits,
        socket,
      );
      connections.add(connection);
      logger.info({ connection: connection.id, subject: outcome.subject }, 'viewer connected');
      events.emit('connection:open', connection);
    });
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `${options.tls ? 'https' : 'http'}://${urlHost}:${port}`,
    port,
    connections,
    events,
    logins,
    async close() {
      const drained = new Promise<void>((resolve) => {
        const check = (): void => {
          if (connections.size > 0) return;
          events.off('connection:close', check);
          resolve();
        };
        events.on('connection:close', check);
        check();
      });
      for (const connection of connections) connection.close('server_shutdown');
      await drained;
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
