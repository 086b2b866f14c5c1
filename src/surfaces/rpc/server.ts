/**
 * The RPC listener: node:http for the dashboard routes, `ws` (noServer) for `/api/ws`. Every
 * upgrade passes the gate (gate.ts) before a WebSocket exists; the principal it stamps is fixed
 * for the life of the connection (AUTH-1).
 */
import { createServer, STATUS_CODES, type IncomingMessage, type RequestListener } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { LoginLimiter, type LoginLimits } from '../../domain/auth/login-limiter.js';
import { DashboardLogins, passwordVersion, type LoginStore } from '../../domain/auth/logins.js';
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
  DASHBOARD_SUBJECT,
  isLoopbackHost,
  parseCookies,
  parseSubprotocols,
  SUBPROTOCOL,
  type GateConfig,
  type RequestFacts,
} from './gate.js';
import { routeHttp, type OpenAiRoute, type SignInListener, type StaticHandler } from './http-routes.js';
import type { MetricsRoute } from './metrics-route.js';
import type { OidcSignIn } from './oidc-routes.js';

export const WS_PATH = '/api/ws';
export const DEFAULT_MAX_CONNECTIONS = 512;
/** The routes a process the gateway spawned is refused on (with every WebSocket upgrade). */
const CHECKED_ROUTES = new Set(['/auth/login', '/api/auth/ws-ticket', '/v1/chat/completions']);
/** The WebSocket close code of a dashboard connection whose login ended with a password change. */
export const CLOSE_PASSWORD_CHANGED = 4001;
/** The WebSocket close code of a dashboard connection whose login signed out (issue 30). */
export const CLOSE_SIGNED_OUT = 4002;
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
  /** The OpenAI-compatible endpoint `/v1/` (surfaces/openai); absent when `api_server` is off. */
  openai?: OpenAiRoute | null;
  /** Serve HTTPS and WSS with this certificate and key (PEM). */
  tls?: { cert: Buffer; key: Buffer } | null;
  /** Bounds on dashboard password attempts; the defaults suit every deployment we know. */
  loginLimits?: LoginLimits;
  /** Keeps dashboard logins across restarts (hashes only); absent: they end with the process. */
  loginStore?: LoginStore | null;
  /** Told each dashboard sign-in and sign-out, accepted or refused (the audit trail, issue 30). */
  onSignIn?: SignInListener;
  /** Dashboard sign-in through an OpenID Connect provider (oidc-routes.ts); absent: off. */
  oidc?: OidcSignIn | null;
  /**
   * Open TCP connections at once (`listener.max_connections`); one more is answered 503
   * `too_many_connections` and closed at once, before it is read (issue 25: idle connections must not
   * use up the daemon's descriptors).
   */
  maxConnections?: number;
  /** True when the peer is a process the daemon spawned (a tool): refused (issue 25). */
  spawnedPeer?: (socket: Socket) => Promise<boolean>;
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
  /** Open TCP connections, and those refused past `maxConnections` since the start. */
  connectionStats(): { open: number; refused: number };
  /**
   * The dashboard password changed (`gatehouse passwd`): the new hash is used at once, and every
   * dashboard login ends — its cookie, its unredeemed tickets, its open WebSockets (closed with
   * 4001 `password_changed`). Returns how many logins and connections ended.
   */
  setPassword(passwordHash: string | null): { logins: number; connections: number };
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

/** Past the cap: a plain HTTP peer is told why (503 `too_many_connections`); a TLS one is closed. */
function refuseConnection(socket: Socket, plain: boolean): void {
  socket.on('error', () => socket.destroy());
  if (!plain) return void socket.destroy();
  const body = JSON.stringify(new HttpRejection('too_many_connections').body());
  socket.end(
    'HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  socket.destroySoon();
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
  const logins = new DashboardLogins(
    now,
    undefined,
    options.loginStore ?? null,
    passwordVersion(options.dashboard?.passwordHash ?? null),
  );
  const routeDeps = {
    config,
    tickets: options.tickets,
    logins,
    limiter: new LoginLimiter(now, options.loginLimits),
    passwordHash: options.dashboard?.passwordHash ?? null,
    staticFiles: options.staticFiles,
    health: options.health,
    metrics: options.metrics ?? null,
    openai: options.openai ?? null,
    onSignIn: options.onSignIn,
    oidc: options.oidc ?? null,
    onSignOut: (login: string): void => {
      for (const connection of connections)
        if (connection.principal.login === login)
          connection.close('signed_out', CLOSE_SIGNED_OUT, 'signed_out');
    },
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

  // Asked once per connection (issue 25): a tool's process may not log in, mint or connect.
  const verdicts = new WeakMap<Socket, Promise<boolean>>();
  const spawned = (socket: Socket): Promise<boolean> => {
    let verdict = verdicts.get(socket);
    if (verdict === undefined) {
      verdict = options.spawnedPeer?.(socket) ?? Promise.resolve(false);
      verdicts.set(socket, verdict);
    }
    return verdict;
  };
  const spawnedRefusal = (): HttpRejection => {
    logger.warn({ reason: 'spawned_by_gateway' }, 'connection from a process the gateway spawned: refused');
    return new HttpRejection('spawned_by_gateway');
  };

  const listener: RequestListener = (req, res) => {
    // Only what logs in or mints a ticket is checked (and upgrades, once authenticated): the page,
    // its assets and /healthz give a tool nothing to act with, and the look-up scans /proc.
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method !== 'POST' || !CHECKED_ROUTES.has(path))
      return void routeHttp(req, res, factsOf(req), routeDeps);
    void spawned(req.socket).then(async (refused) => {
      if (!refused) return routeHttp(req, res, factsOf(req), routeDeps);
      const rejection = spawnedRefusal();
      res.writeHead(rejection.status, {
        'content-type': 'application/json; charset=utf-8',
        connection: 'close',
      });
      res.end(JSON.stringify(rejection.body()));
    });
  };
  const server = options.tls ? createTlsServer(options.tls, listener) : createServer(listener);
  const maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const counted = { open: 0, refused: 0 };
  server.on('connection', (socket: Socket) => {
    if (counted.open >= maxConnections) {
      counted.refused++;
      if (counted.refused === 1 || counted.refused % 100 === 0)
        logger.warn({ open: counted.open, refused: counted.refused }, 'connection refused: too many open');
      return refuseConnection(socket, !options.tls);
    }
    counted.open++;
    socket.once('close', () => counted.open--);
  });

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
    // Only a credential that passed is worth the process look-up (a flood of bad ones costs none).
    void spawned(req.socket).then((refused) => {
      if (refused) return rejectUpgrade(socket, spawnedRefusal());
      return wss.handleUpgrade(req, socket, head, (ws) => {
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
    });
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      // An accept that fails (EMFILE: out of descriptors) refuses that one peer; the daemon goes on.
      server.on('error', (error) => logger.error({ err: error }, 'listener error'));
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
    connectionStats: () => ({ ...counted }),
    setPassword(passwordHash) {
      routeDeps.passwordHash = passwordHash;
      const ended = logins.endAll(passwordVersion(passwordHash));
      options.tickets.revokeSubject(DASHBOARD_SUBJECT);
      let closed = 0;
      for (const connection of connections) {
        if (connection.principal.provider !== 'dashboard') continue;
        connection.close('password_changed', CLOSE_PASSWORD_CHANGED, 'password_changed');
        closed++;
      }
      logger.info({ logins: ended, connections: closed }, 'dashboard password changed: its logins ended');
      return { logins: ended, connections: closed };
    },
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
