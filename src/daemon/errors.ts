/**
 * Local, typed failures of the daemon and its command line. Each message is one line that says
 * what happened and what to do (SPEC UX-3); the CLI prints it as-is and never a stack trace.
 * Wire errors (JSON-RPC codes and reasons) live in the protocol module, not here.
 */
export type DaemonErrorCode =
  | 'config_invalid'
  | 'config_unreadable'
  | 'home_unusable'
  | 'already_running'
  | 'not_running'
  | 'port_in_use'
  | 'listen_failed'
  | 'service_failed'
  | 'illegal_transition'
  | 'start_failed'
  | 'stop_timeout'
  | 'invalid_input'
  | 'not_available';

export class DaemonError extends Error {
  override readonly name = 'DaemonError';
  constructor(
    readonly code: DaemonErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The first line of any thrown value, for places that must show something readable. */
export function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0]?.trim() || 'unknown error';
}
