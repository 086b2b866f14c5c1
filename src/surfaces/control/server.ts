/**
 * The local control socket `<home>/gateway.sock` (AUTH-2). Only the owner can connect: the socket
 * is created under a 0177 umask and then verified to be mode 0600, so the file system is the
 * authentication. It hands out single-use tickets that a native client then presents at the
 * WebSocket upgrade.
 */
import { chmodSync, lstatSync, statSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import { connect, createServer, type Socket } from 'node:net';
import type { TicketBook, TicketGrant } from '../../domain/auth/tickets.js';
import { TicketCapacityError } from '../../domain/auth/tickets.js';
import { makeDirs } from '../../daemon/dirs.js';
import { MAX_SOCKET_PATH_BYTES } from '../../daemon/socket-path.js';
import { silentLogger, type Logger } from '../../protocol/logger.js';
import {
  ControlRequest,
  MAX_CONTROL_LINE_BYTES,
  type ControlErrorReason,
  type ControlErrorReply,
  type ControlIdentity,
  type PasswordReloadReply,
  type TicketReply,
} from './wire.js';

export interface ControlServerOptions {
  socketPath: string;
  tickets: TicketBook;
  /** Whom native tickets speak for: the owner of this daemon, in its profile. */
  grant: TicketGrant;
  identify: () => ControlIdentity;
  /** The home folder; a socket outside it gets its folder created and verified owner-only. */
  homeRoot?: string;
  /** True when a logical session of the grant's profile has this id (a worker ticket may name it). */
  sessionExists?: (logicalId: string) => Promise<boolean>;
  /** Reads the dashboard password again from the config file and ends every dashboard login. */
  reloadPassword?: () => Promise<Omit<PasswordReloadReply, 'reloaded'>>;
  /** Connections at once; default MAX_CONTROL_CONNECTIONS. */
  maxConnections?: number;
  /** True when the peer is a process the daemon spawned (a tool): it is refused (issue 25). */
  spawnedPeer?: (socket: Socket) => Promise<boolean>;
  logger?: Logger;
}

export interface ControlServer {
  readonly socketPath: string;
  close(): Promise<void>;
}

/** A local failure to open the control socket, with a message an operator can act on. */
export class ControlSocketError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ControlSocketError';
  }
}

const OWNER_ONLY = 0o600;
export const MAX_CONTROL_CONNECTIONS = 64;
const IDLE_TIMEOUT_MS = 5_000;

function errorReply(reason: ControlErrorReason, message: string): ControlErrorReply {
  return { error: { reason, message } };
}

/** One request line → one reply object (the store is only asked whether named sessions exist). */
export async function answerControlLine(
  line: string,
  options: Pick<ControlServerOptions, 'tickets' | 'grant' | 'identify' | 'sessionExists' | 'reloadPassword'>,
): Promise<ControlIdentity | TicketReply | PasswordReloadReply | ControlErrorReply> {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return errorReply('parse_error', 'the request line is not valid JSON');
  }
  const parsed = ControlRequest.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'request'}: ${i.message}`);
    return errorReply('invalid_request', problems.join('; '));
  }
  const request = parsed.data;
  switch (request.op) {
    case 'identify':
      return options.identify();
    case 'reload-password':
      if (!options.reloadPassword)
        return errorReply('invalid_request', 'this gateway cannot reload its password');
      return { reloaded: true, ...(await options.reloadPassword()) };
    case 'session-ticket': {
      const sessions = request.sessions === undefined ? undefined : [...new Set(request.sessions)];
      const unknown: string[] = [];
      for (const id of sessions ?? []) if (!((await options.sessionExists?.(id)) ?? false)) unknown.push(id);
      if (unknown.length > 0) {
        return errorReply(
          'unknown_session',
          `no session ${unknown.join(', ')} in profile ${options.grant.profile}: list them with "gatehouse sessions"`,
        );
      }
      try {
        const grant: TicketGrant =
          request.member !== undefined
            ? { subject: `member:${request.member}`, profile: options.grant.profile, role: 'member' }
            : sessions === undefined
              ? options.grant
              : { ...options.grant, sessions };
        const { ticket, expiresAt } = options.tickets.mint(request.purpose, grant);
        return {
          ticket,
          expires_at: new Date(expiresAt).toISOString(),
          ...(sessions !== undefined ? { sessions } : {}),
        };
      } catch (error) {
        if (error instanceof TicketCapacityError)
          return errorReply(
            error.scope === 'principal' ? 'principal_ticket_capacity' : 'ticket_capacity',
            error.message,
          );
        throw error;
      }
    }
  }
}

function someoneAnswers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(socketPath);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

/** Removes a socket file left by a dead daemon; refuses if it is alive or not a socket at all. */
async function clearStaleSocket(socketPath: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(socketPath).isSocket();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (!isSocket)
    throw new ControlSocketError(`${socketPath} exists and is not a socket; refusing to replace it`);
  if (await someoneAnswers(socketPath)) {
    throw new ControlSocketError(`another gateway is already answering on ${socketPath}`);
  }
  unlinkSync(socketPath);
}

export const SPAWNED_PEER_MESSAGE =
  'refused: this process was started by the gateway (a tool); a tool may not drive the gateway';

function serveConnection(socket: Socket, options: ControlServerOptions, logger: Logger): void {
  let buffered = '';
  socket.setEncoding('utf8');
  socket.setTimeout(IDLE_TIMEOUT_MS, () => socket.destroy());
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    const end = buffered.indexOf('\n');
    if (end < 0 && buffered.length <= MAX_CONTROL_LINE_BYTES) return;
    socket.removeAllListeners('data');
    // Asked once per connection, once its line is in (a connection that sends nothing costs nothing).
    const spawned = options.spawnedPeer?.(socket) ?? Promise.resolve(false);
    const reply: Promise<unknown> = spawned.then((refused) => {
      if (refused) {
        logger.warn(
          { reason: 'spawned_by_gateway' },
          'control connection from a process the gateway spawned: refused',
        );
        return errorReply('spawned_by_gateway', SPAWNED_PEER_MESSAGE);
      }
      if (end < 0) return errorReply('invalid_request', 'request line too long');
      return answerControlLine(buffered.slice(0, end), options).catch((error: unknown) => {
        logger.error({ err: error }, 'control request failed');
        return errorReply('internal_error', 'internal error');
      });
    });
    void reply.then((answer) => socket.end(`${JSON.stringify(answer)}\n`));
  });
}

/**
 * The socket's folder, when it is not the home (a long home's socket lives under /tmp, see
 * daemon/socket-path.ts): created owner-only, and refused unless it is ours, 0700 and not a link,
 * so no other user can swap the socket under us.
 */
function ensureSocketFolder(socketPath: string, homeRoot: string | undefined): void {
  const folder = dirname(socketPath);
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
    throw new ControlSocketError(
      `the control socket path ${socketPath} is ${Buffer.byteLength(socketPath)} bytes, over the ${MAX_SOCKET_PATH_BYTES}-byte limit of Unix sockets: use a shorter GATEHOUSE_HOME`,
    );
  }
  if (homeRoot === undefined || folder === homeRoot) return;
  makeDirs(folder, 0o700);
  const stat = lstatSync(folder);
  const mine = process.getuid === undefined || stat.uid === process.getuid();
  if (!stat.isDirectory() || !mine || (stat.mode & 0o077) !== 0) {
    throw new ControlSocketError(
      `${folder} (the control socket's folder) must be a folder of yours with mode 700; it is not, so the gateway refuses to use it: remove it, or use a shorter GATEHOUSE_HOME so the socket lives in the home`,
    );
  }
}

export async function startControlServer(options: ControlServerOptions): Promise<ControlServer> {
  const logger = options.logger ?? silentLogger;
  const { socketPath } = options;
  ensureSocketFolder(socketPath, options.homeRoot);
  await clearStaleSocket(socketPath);
  // Bounded like the listener (issue 25): past the cap a peer is told why and closed before it is read.
  const maxConnections = options.maxConnections ?? MAX_CONTROL_CONNECTIONS;
  let open = 0;
  const server = createServer((socket) => {
    if (open >= maxConnections) {
      socket.on('error', () => socket.destroy());
      socket.end(
        `${JSON.stringify(errorReply('too_many_connections', `the control socket holds its maximum of ${maxConnections} connections; retry shortly`))}\n`,
      );
      return;
    }
    open++;
    socket.once('close', () => open--);
    serveConnection(socket, options, logger);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // The socket is bound synchronously inside listen(); the umask makes it owner-only from birth.
    const previous = process.umask(0o177);
    try {
      server.listen(socketPath, () => {
        server.off('error', reject);
        // An accept that fails (EMFILE: out of descriptors) refuses that one peer; the daemon goes on.
        server.on('error', (error) => logger.error({ err: error }, 'control socket error'));
        resolve();
      });
    } finally {
      process.umask(previous);
    }
  });
  const close = (): Promise<void> => new Promise<void>((resolve) => server.close(() => resolve()));
  chmodSync(socketPath, OWNER_ONLY);
  const mode = statSync(socketPath).mode & 0o777;
  if (mode !== OWNER_ONLY) {
    await close();
    throw new ControlSocketError(
      `${socketPath} has mode ${mode.toString(8)}, expected 600; refusing to serve`,
    );
  }
  logger.info({ socket: socketPath }, 'control socket listening');
  return { socketPath, close };
}
