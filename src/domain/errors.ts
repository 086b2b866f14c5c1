/**
 * Typed local failures of the domain. Each error carries a stable snake_case `reason` that code and
 * tests branch on, and a message written for a human (it names the field and what is wrong, and never
 * carries a stack trace or a secret). Wire errors are mapped from these by the protocol layer.
 */

export abstract class GatehouseError extends Error {
  /** Stable machine-readable cause, snake_case. Never reworded once released. */
  abstract readonly reason: string;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A SessionSource could not be built: malformed JSON text, an unknown key, or a field of the wrong kind. */
export class InvalidSessionSourceError extends GatehouseError {
  readonly reason = 'invalid_session_source';

  constructor(
    message: string,
    /** The offending field (dotted path), or null when the input as a whole is wrong. */
    readonly field: string | null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Reasons a gateway operation refuses a client request. Each maps one-to-one onto a wire reason of
 * protocol/errors.ts (the dispatcher does the mapping), so the domain never builds wire errors.
 */
export type GatewayReason =
  | 'invalid_params'
  | 'permission_denied'
  | 'not_found'
  | 'admission_conflict'
  | 'runtime_draining'
  | 'stale_generation'
  | 'unknown_execution'
  | 'storage_unavailable'
  | 'launch_credentials_unavailable'
  | 'snapshot_required';

export class GatewayError extends GatehouseError {
  constructor(
    readonly reason: GatewayReason,
    message: string,
    /** Structured help for the client (which field, which admission…); never a secret. */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}
