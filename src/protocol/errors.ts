/**
 * Every error Gatehouse puts on the wire, in one place.
 *
 * JSON-RPC errors: the five standard codes, plus application reasons in the range JSON-RPC 2.0
 * reserves for implementation-defined server errors (-32000 to -32099). Every error object carries
 * `data.reason`, a stable snake_case string clients branch on; `message` is for humans and may
 * change. `data.details` is optional structured help (for example, which param key was wrong).
 *
 * Upgrade/HTTP rejections: the WebSocket upgrade gate and the dashboard HTTP routes answer with an
 * HTTP status and a small JSON body `{error: {reason, message}}`, with reasons listed in
 * HTTP_REJECTIONS below. docs/protocol.md lists both tables with what a client should do.
 */

/** Standard JSON-RPC 2.0 codes. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

/** Inclusive bounds of the server-defined range our application reasons live in. */
export const SERVER_ERROR_RANGE = { highest: -32000, lowest: -32099 } as const;

export interface ReasonInfo {
  readonly code: number;
  readonly meaning: string;
}

/** The JSON-RPC error reasons. Adding one is a protocol change: document it in docs/protocol.md. */
export const RPC_REASONS = {
  parse_error: { code: PARSE_ERROR, meaning: 'the frame is not valid JSON' },
  invalid_request: { code: INVALID_REQUEST, meaning: 'the frame is JSON but not a JSON-RPC 2.0 request' },
  method_not_found: { code: METHOD_NOT_FOUND, meaning: 'no method by that name' },
  invalid_params: { code: INVALID_PARAMS, meaning: 'params do not match the method schema' },
  internal_error: { code: INTERNAL_ERROR, meaning: 'the server failed; details are only in its log' },
  permission_denied: { code: -32001, meaning: 'the caller lacks the capability or access needed' },
  not_found: { code: -32002, meaning: 'the named session, prompt or admission does not exist' },
  admission_conflict: { code: -32003, meaning: 'a submission_id was reused with a different payload' },
  runtime_draining: { code: -32004, meaning: 'the daemon is shutting down and takes no new input' },
  stale_generation: { code: -32005, meaning: 'the execution_generation named is not the current one' },
  unknown_execution: { code: -32006, meaning: 'a turn was running when the daemon died; resolve it first' },
  storage_unavailable: { code: -32007, meaning: 'the store cannot be written right now' },
  launch_credentials_unavailable: {
    code: -32008,
    meaning:
      'the in-memory api_key of this session was lost with a restart, or with the cluster instance holding it',
  },
  snapshot_required: { code: -32009, meaning: 'the events asked for are older than the replay buffer' },
  already_resolved: { code: -32010, meaning: 'the approval or clarify prompt was already answered' },
  unauthenticated: { code: -32011, meaning: 'the connection carries no identity for this call' },
  session_busy: { code: -32012, meaning: 'a turn holds the session; a control waits for it to settle' },
  owner_unreachable: {
    code: -32013,
    meaning: 'the cluster instance running the session did not answer a relayed control in time',
  },
  cwd_in_home: {
    code: -32014,
    meaning:
      "the cwd is inside the gateway's own folder (its home or its socket's): tools may not work there",
  },
  approval_not_found: { code: -32015, meaning: 'no remembered approval has that id (already revoked?)' },
  budget_above_profile: {
    code: -32016,
    meaning: "a session's budget asked for more than the profile's budgets allow",
  },
  budget_not_paused: {
    code: -32017,
    meaning: 'the session is not paused by its budget: nothing to continue',
  },
  turn_not_completed: {
    code: -32018,
    meaning:
      "gatehouse acp: the prompt's turn did not complete (it failed, its effect is unknown, or the gateway went away mid-turn)",
  },
  budget_paused: {
    code: -32019,
    meaning: 'the session is paused by its budget, which has no room for a turn: the prompt was not taken',
  },
  delegation_too_wide: {
    code: -32020,
    meaning:
      'a delegation asked for a child more powerful than its parent session (details.field names what)',
  },
  delegation_limit: {
    code: -32021,
    meaning: 'a delegation would pass delegations.max_depth or delegations.max_per_session (details.limit)',
  },
  invalid_schedule: {
    code: -32022,
    meaning: "a scheduled job's schedule cannot be read or never fires (details.field names the part)",
  },
  job_busy: { code: -32023, meaning: "the scheduled job's previous run is still going: wait for it to end" },
  member_limit: {
    code: -32024,
    meaning: "a member asked for a launch option the operator's member limits (auth.members) refuse",
  },
  share_level: {
    code: -32025,
    meaning: 'the session is shared with this member at a level that does not include the operation',
  },
  fork_point_unsettled: {
    code: -32026,
    meaning: 'the message to fork from belongs to a turn that has not settled (running or unknown)',
  },
  no_home_channel: {
    code: -32027,
    meaning: "a job's result is to go to a platform's home channel, but home_channels names none for it",
  },
  mcp_servers_mismatch: {
    code: -32028,
    meaning:
      "MCP server values were supplied for a server that is not one of the session's own as it was created (details.server names it)",
  },
} as const satisfies Record<string, ReasonInfo>;

export type RpcReason = keyof typeof RPC_REASONS;

/** A JSON-RPC error object as it crosses the wire. */
export interface RpcErrorObject {
  code: number;
  message: string;
  data: { reason: RpcReason; details?: unknown };
}

/** The one error class for failures a client is meant to see. Anything else becomes internal_error. */
export class RpcError extends Error {
  readonly code: number;
  readonly reason: RpcReason;
  readonly details: unknown;

  constructor(reason: RpcReason, message: string, details?: unknown) {
    super(message);
    this.name = 'RpcError';
    this.reason = reason;
    this.code = RPC_REASONS[reason].code;
    this.details = details;
  }

  toErrorObject(): RpcErrorObject {
    const data: RpcErrorObject['data'] = { reason: this.reason };
    if (this.details !== undefined) data.details = this.details;
    return { code: this.code, message: this.message, data };
  }
}

export const parseError = (message = 'frame is not valid JSON'): RpcError =>
  new RpcError('parse_error', message);
export const invalidRequest = (message: string, details?: unknown): RpcError =>
  new RpcError('invalid_request', message, details);
export const methodNotFound = (method: string): RpcError =>
  new RpcError('method_not_found', `unknown method: ${method}`, { method });
export const invalidParams = (message: string, details?: unknown): RpcError =>
  new RpcError('invalid_params', message, details);
/** Deliberately generic: the cause goes to the log, never to the client. */
export const internalError = (): RpcError => new RpcError('internal_error', 'internal error');
export const permissionDenied = (message: string, details?: unknown): RpcError =>
  new RpcError('permission_denied', message, details);
export const notFound = (message: string, details?: unknown): RpcError =>
  new RpcError('not_found', message, details);

/**
 * Reasons the upgrade gate and the HTTP routes refuse a request, with their HTTP status. A body is
 * always `{error: {reason, message}}` and never contains a stack or a credential.
 */
export const HTTP_REJECTIONS = {
  missing: { status: 401, meaning: 'no credential was presented' },
  forged: { status: 401, meaning: 'the ticket, cookie or token is not one the server issued' },
  replayed: { status: 401, meaning: 'the ticket was already used' },
  expired: { status: 401, meaning: 'the ticket or login is past its lifetime' },
  wrong_purpose: { status: 401, meaning: 'the ticket was issued for another path' },
  legacy_token_disabled: { status: 401, meaning: 'the legacy ?token= path is not enabled' },
  bad_password: { status: 401, meaning: 'the dashboard password is wrong' },
  dashboard_disabled: { status: 403, meaning: 'no dashboard password is configured' },
  origin_denied: { status: 403, meaning: 'the Origin is neither this server nor an allowed origin' },
  host_denied: { status: 403, meaning: 'the Host header does not name this loopback listener' },
  remote_denied: { status: 403, meaning: 'the peer is not on loopback and remote access is off' },
  protocol_required: { status: 400, meaning: 'a ticket was sent without the gatehouse.v1 subprotocol' },
  bad_request: { status: 400, meaning: 'the request body is malformed or too large' },
  rate_limited: { status: 429, meaning: 'too many login attempts; retry after the Retry-After seconds' },
  not_found: { status: 404, meaning: 'no such route' },
  ticket_capacity: { status: 503, meaning: 'too many unredeemed tickets; retry shortly' },
  principal_ticket_capacity: {
    status: 503,
    meaning: 'this principal holds its share of unredeemed tickets; retry shortly',
  },
  too_many_connections: {
    status: 503,
    meaning: 'the listener holds its maximum of open connections (listener.max_connections)',
  },
  spawned_by_gateway: {
    status: 403,
    meaning: 'the peer is a process the gateway spawned (a tool); tools may not drive the gateway',
  },
  oidc_disabled: {
    status: 404,
    meaning: 'sign-in through an identity provider is not configured (auth.oidc)',
  },
  oidc_state: {
    status: 400,
    meaning: 'the sign-in was not started in this browser, was already used, or took too long; start again',
  },
  oidc_invalid: { status: 401, meaning: "the identity provider's answer did not verify" },
  oidc_refused: { status: 403, meaning: 'this identity is not allowed on this gateway (auth.oidc rules)' },
  oidc_unreachable: { status: 502, meaning: 'the identity provider could not be reached' },
  internal_error: { status: 500, meaning: 'the server failed; details are only in its log' },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type HttpRejectionReason = keyof typeof HTTP_REJECTIONS;

export class HttpRejection extends Error {
  readonly reason: HttpRejectionReason;
  readonly status: number;

  constructor(reason: HttpRejectionReason, message: string = HTTP_REJECTIONS[reason].meaning) {
    super(message);
    this.name = 'HttpRejection';
    this.reason = reason;
    this.status = HTTP_REJECTIONS[reason].status;
  }

  body(): { error: { reason: HttpRejectionReason; message: string } } {
    return { error: { reason: this.reason, message: this.message } };
  }
}
