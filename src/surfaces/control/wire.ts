/**
 * The control socket's line protocol (AUTH-2): one JSON object per line in, one per line out.
 * Shared by the server and the client so both read the same shapes.
 */
import { z } from 'zod';

/** A member's name as a ticket carries it: letters, digits, dot, dash, underscore, @. */
export const MEMBER_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$/;

export const ControlRequest = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('identify') }),
  /** `gatehouse passwd` wrote a new dashboard password: use it now and end every dashboard login. */
  z.strictObject({ op: z.literal('reload-password') }),
  z
    .strictObject({
      op: z.literal('session-ticket'),
      // The dashboard purpose is minted only from a dashboard login, never here.
      purpose: z.enum(['interactive', 'worker-adoption']),
      /** Worker adoption only: the logical session ids the ticket may reach, and nothing else. */
      sessions: z.array(z.string().min(1).max(200)).min(1).max(100).optional(),
      /** Interactive only: the ticket speaks for this member (`member:<name>`), not the owner (issue 30). */
      member: z.string().regex(MEMBER_NAME).optional(),
    })
    .refine((r) => r.sessions === undefined || r.purpose === 'worker-adoption', {
      path: ['sessions'],
      message: 'only a worker-adoption ticket is bound to sessions',
    })
    .refine((r) => r.member === undefined || r.purpose === 'interactive', {
      path: ['member'],
      message: 'only an interactive ticket speaks for a member',
    }),
]);
export type ControlRequest = z.infer<typeof ControlRequest>;

/** What `identify` answers: enough for a client to find and trust the running daemon. */
export interface ControlIdentity {
  state: string;
  url: string | null;
  instance_id: string;
  epoch: number;
  profiles: string[];
}

/** What `reload-password` answers: the dashboard logins and connections it ended. */
export interface PasswordReloadReply {
  reloaded: true;
  logins_ended: number;
  connections_closed: number;
}

export interface TicketReply {
  ticket: string;
  /** ISO-8601 UTC. */
  expires_at: string;
  /** The sessions a bound worker-adoption ticket may reach. */
  sessions?: string[];
}

export type ControlErrorReason =
  | 'parse_error'
  | 'invalid_request'
  | 'unknown_session'
  | 'ticket_capacity'
  | 'principal_ticket_capacity'
  | 'spawned_by_gateway'
  | 'too_many_connections'
  | 'internal_error';

export interface ControlErrorReply {
  error: { reason: ControlErrorReason; message: string };
}

/** A request line longer than this is refused: no legitimate request comes close. */
export const MAX_CONTROL_LINE_BYTES = 64 * 1024;
