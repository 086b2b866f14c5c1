/**
 * `gatehouse ticket`: a single-use, 30-second session ticket from the running gateway's control
 * socket, for a script or worker to present at the WebSocket upgrade (docs/protocol.md).
 */
import { existsSync } from 'node:fs';
import { DaemonError } from '../../../daemon/errors.js';
import { ControlRequestError, requestTicket } from '../../control/client.js';
import { MEMBER_NAME } from '../../control/wire.js';
import { TICKET_PURPOSES as PURPOSES } from '../program.js';
import { cliHome, say } from '../shared.js';

type Purpose = (typeof PURPOSES)[number];

interface TicketFlags {
  purpose: string;
  session: string[];
  member?: string;
  json?: boolean;
}

function checkFlags(flags: TicketFlags): { purpose: Purpose; sessions: string[] | undefined } {
  const purpose = PURPOSES.find((p) => p === flags.purpose);
  if (purpose === undefined) {
    throw new DaemonError('invalid_input', `--purpose must be one of ${PURPOSES.join(', ')}`);
  }
  if (purpose === 'interactive' && flags.session.length > 0) {
    throw new DaemonError(
      'invalid_input',
      '--session binds a worker-adoption ticket; add --purpose worker-adoption (an interactive ticket reaches every session)',
    );
  }
  if (purpose === 'worker-adoption' && flags.session.length === 0) {
    throw new DaemonError(
      'invalid_input',
      'a worker-adoption ticket reaches only the sessions it names: add --session ID (repeat it for more; "gatehouse sessions" lists them)',
    );
  }
  if (flags.member !== undefined && purpose !== 'interactive')
    throw new DaemonError(
      'invalid_input',
      '--member names whom an interactive ticket speaks for; leave out --purpose',
    );
  if (flags.member !== undefined && !MEMBER_NAME.test(flags.member))
    throw new DaemonError(
      'invalid_input',
      '--member must be a name of letters, digits, dots, dashes, underscores or @ (it becomes member:<name>)',
    );
  return { purpose, sessions: purpose === 'worker-adoption' ? flags.session : undefined };
}

/** `gatehouse ticket`: one ticket from the running gateway's control socket. */
export async function ticket(flags: TicketFlags): Promise<void> {
  const { purpose, sessions } = checkFlags(flags);
  const layout = cliHome();
  if (!existsSync(layout.controlSocket)) {
    throw new DaemonError(
      'not_running',
      `tickets come from a running gateway, and none is listening on ${layout.controlSocket}: start it with "gatehouse start"`,
    );
  }
  let reply;
  try {
    reply = await requestTicket(layout.controlSocket, purpose, sessions, flags.member);
  } catch (error) {
    if (!(error instanceof ControlRequestError)) throw error;
    const hint = error.reason === 'unreachable' ? ' (is it running? "gatehouse status")' : '';
    throw new DaemonError('not_available', `the gateway refused a ticket: ${error.message}${hint}`);
  }
  if (flags.json) {
    say(
      JSON.stringify({
        ticket: reply.ticket,
        expires_at: reply.expires_at,
        purpose,
        ...(sessions ? { sessions } : {}),
        ...(flags.member !== undefined ? { member: `member:${flags.member}` } : {}),
      }),
    );
  } else {
    say(reply.ticket);
  }
}
