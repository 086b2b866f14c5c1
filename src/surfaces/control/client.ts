/** Client side of the control socket, for the CLI (`gatehouse ticket`, `gatehouse chat`) and tests. */
import { connect } from 'node:net';
import {
  MAX_CONTROL_LINE_BYTES,
  type ControlErrorReason,
  type ControlIdentity,
  type ControlRequest,
  type PasswordReloadReply,
  type TicketReply,
} from './wire.js';

export class ControlRequestError extends Error {
  constructor(
    readonly reason: ControlErrorReason | 'unreachable' | 'bad_reply',
    message: string,
  ) {
    super(message);
    this.name = 'ControlRequestError';
  }
}

/** Sends one request line and resolves with the one reply line, parsed. */
export function controlRequest(socketPath: string, request: ControlRequest): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let buffered = '';
    socket.setEncoding('utf8');
    socket.once('connect', () => socket.write(`${JSON.stringify(request)}\n`));
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      if (buffered.length > MAX_CONTROL_LINE_BYTES) socket.destroy(new Error('reply too long'));
    });
    socket.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new ControlRequestError(
          'unreachable',
          `cannot reach the gateway at ${socketPath}: ${error.code ?? error.message}`,
        ),
      ),
    );
    socket.once('end', () => {
      let reply: unknown;
      try {
        reply = JSON.parse(buffered.trim());
      } catch {
        return reject(new ControlRequestError('bad_reply', 'the gateway sent a malformed reply'));
      }
      const error = (reply as { error?: { reason: ControlErrorReason; message: string } }).error;
      if (error) return reject(new ControlRequestError(error.reason, error.message));
      resolve(reply);
    });
  });
}

/** Tells the running gateway that `gatehouse passwd` changed the dashboard password. */
export async function reloadPassword(socketPath: string): Promise<PasswordReloadReply> {
  return (await controlRequest(socketPath, { op: 'reload-password' })) as PasswordReloadReply;
}

/** A ticket from the control socket; `sessions` binds a worker-adoption ticket to those sessions. */
export async function requestTicket(
  socketPath: string,
  purpose: 'interactive' | 'worker-adoption',
  sessions?: readonly string[],
  /** Interactive only: a ticket for this member (`member:<name>`) instead of the owner. */
  member?: string,
): Promise<TicketReply> {
  const request: ControlRequest = {
    op: 'session-ticket',
    purpose,
    ...(sessions !== undefined ? { sessions: [...sessions] } : {}),
    ...(member !== undefined ? { member } : {}),
  };
  return (await controlRequest(socketPath, request)) as TicketReply;
}

/** Delay before retry `attempt` (0-based) of a refused mint: doubling from 100 ms, capped at 2 s. */
export function ticketBackoffMs(attempt: number): number {
  return Math.min(2000, 100 * 2 ** Math.min(attempt, 10));
}

/**
 * requestTicket, retried with backoff while the gateway answers `ticket_capacity` (too many
 * unredeemed tickets: they free themselves within one ticket lifetime, 30 s). Every other refusal
 * is final and thrown at once.
 */
export async function requestTicketPatiently(
  socketPath: string,
  purpose: 'interactive' | 'worker-adoption',
  options: { giveUpMs?: number; onWait?: (message: string, attempt: number) => void } = {},
): Promise<TicketReply> {
  const end = Date.now() + (options.giveUpMs ?? 35_000);
  for (let attempt = 0; ; attempt++) {
    try {
      return await requestTicket(socketPath, purpose);
    } catch (error) {
      const full =
        error instanceof ControlRequestError &&
        (error.reason === 'ticket_capacity' || error.reason === 'principal_ticket_capacity');
      if (!full || Date.now() + ticketBackoffMs(attempt) > end) throw error;
      options.onWait?.(error.message, attempt);
    }
    await new Promise((resolve) => setTimeout(resolve, ticketBackoffMs(attempt)));
  }
}

export async function identify(socketPath: string): Promise<ControlIdentity> {
  return (await controlRequest(socketPath, { op: 'identify' })) as ControlIdentity;
}
