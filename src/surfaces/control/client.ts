/** Client side of the control socket, for the CLI (`gatehouse ticket`, `gatehouse chat`) and tests. */
import { connect } from 'node:net';
import {
  MAX_CONTROL_LINE_BYTES,
  type ControlErrorReason,
  type ControlIdentity,
  type ControlRequest,
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

export async function requestTicket(
  socketPath: string,
  purpose: 'interactive' | 'worker-adoption',
): Promise<TicketReply> {
  return (await controlRequest(socketPath, { op: 'session-ticket', purpose })) as TicketReply;
}

export async function identify(socketPath: string): Promise<ControlIdentity> {
  return (await controlRequest(socketPath, { op: 'identify' })) as ControlIdentity;
}
