/**
 * Gatehouse's typed errors. Every error a caller may branch on carries a stable snake_case `reason`
 * (the same string the wire puts in `data.reason`) and a message a human can act on. Messages never
 * carry stack traces or secrets.
 */

export class GatehouseError extends Error {
  /** Stable, snake_case; callers branch on this, never on the message. */
  readonly reason: string;

  constructor(reason: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.reason = reason;
  }
}

/**
 * The state database cannot be opened or used (STO-5): missing permissions, not a database, a
 * schema newer than this code. The message names the file and the cause. Nothing was written.
 */
export class StorageUnavailableError extends GatehouseError {
  readonly file: string;

  constructor(file: string, cause: string, options?: { cause?: unknown }) {
    super('storage_unavailable', `cannot use the state database ${file}: ${cause}`, options);
    this.file = file;
  }
}

/** The database was written by a newer Gatehouse (STO-6); this code refuses to touch it. */
export class SchemaTooNewError extends StorageUnavailableError {
  readonly databaseVersion: number;
  readonly codeVersion: number;

  constructor(file: string, databaseVersion: number, codeVersion: number) {
    super(
      file,
      `its schema is version ${databaseVersion}, but this Gatehouse only knows up to version ${codeVersion}; ` +
        'upgrade Gatehouse (the database was not changed)',
    );
    this.databaseVersion = databaseVersion;
    this.codeVersion = codeVersion;
  }
}

/** A schema migration failed; its transaction was rolled back and the database is as it was. */
export class MigrationFailedError extends StorageUnavailableError {
  readonly version: number;

  constructor(file: string, version: number, name: string, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(file, `migration ${version} (${name}) failed and was rolled back: ${why}`, { cause });
    this.version = version;
  }
}

/** A named thing (session, route) does not exist. */
export class NotFoundError extends GatehouseError {
  constructor(message: string) {
    super('not_found', message);
  }
}

/** A caller passed a value the operation cannot accept; nothing was changed. */
export class InvalidParamsError extends GatehouseError {
  constructor(message: string) {
    super('invalid_params', message);
  }
}

/** A SessionSource could not be built: malformed JSON text, an unknown key, or a field of the wrong kind. */
export class InvalidSessionSourceError extends GatehouseError {
  constructor(
    message: string,
    /** The offending field (dotted path), or null when the input as a whole is wrong. */
    readonly field: string | null,
    options?: { cause?: unknown },
  ) {
    super('invalid_session_source', message, options);
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
  | 'snapshot_required'
  | 'session_busy'
  | 'owner_unreachable'
  | 'cwd_in_home'
  | 'approval_not_found'
  | 'budget_above_profile'
  | 'budget_not_paused'
  | 'budget_paused'
  | 'delegation_too_wide'
  | 'delegation_limit'
  | 'invalid_schedule'
  | 'job_busy'
  | 'member_limit'
  | 'share_level'
  | 'fork_point_unsettled'
  | 'no_home_channel'
  | 'mcp_servers_mismatch';

export class GatewayError extends GatehouseError {
  declare readonly reason: GatewayReason;

  constructor(
    reason: GatewayReason,
    message: string,
    /** Structured help for the client (which field, which admission…); never a secret. */
    readonly details?: Record<string, unknown>,
  ) {
    super(reason, message);
  }
}
