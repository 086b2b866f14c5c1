/**
 * The one error type of the model client. `kind` is stable (it becomes a turn's failure reason);
 * `message` is a sentence a user can read: what happened, never a stack trace or a credential.
 */
export const MODEL_ERROR_KINDS = [
  'auth',
  'rate_limit',
  'context_overflow',
  'server',
  'network',
  'timeout',
  'bad_response',
  'cancelled',
  /** The session's frozen provider is no longer configured (the daemon's config changed). */
  'provider_unavailable',
  /** The session's budget cannot take the call's worst case (docs/cost.md, "Budgets"): it was not sent. */
  'budget_exhausted',
] as const;
export type ModelErrorKind = (typeof MODEL_ERROR_KINDS)[number];

export class ModelError extends Error {
  override readonly name = 'ModelError';
  constructor(
    readonly kind: ModelErrorKind,
    message: string,
    /** The HTTP status, when the server answered. */
    readonly status: number | null = null,
    /** How many requests were sent before giving up (1 = no retry). */
    readonly attempts = 1,
  ) {
    super(message);
  }
}

export function isModelError(value: unknown): value is ModelError {
  return value instanceof ModelError;
}

/** Removes every occurrence of `secret` from `text` (servers sometimes echo the request back). */
export function redactSecret(text: string, secret: string | undefined): string {
  if (!secret || secret.length < 4) return text;
  return text.split(secret).join('[redacted]');
}

/** Keeps a provider's error text readable in one line and bounded in size. */
export function summarizeProviderText(text: string, max = 300): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > max ? `${oneLine.slice(0, max)}…` : oneLine;
}

const CONTEXT_OVERFLOW =
  /context[_ ]length|context window|maximum context|too many tokens|prompt is too long|exceeds the context/i;

/**
 * Classifies an HTTP error answer. Pure: the status and the provider's own error text decide.
 * `detail` must already be redacted.
 */
export function classifyHttpError(
  status: number,
  detail: string,
  /** Where the key came from, as a user can act on it (`the variable OPENAI_API_KEY …`). */
  keySource = 'the api_key for this provider',
): { kind: ModelErrorKind; message: string } {
  const said = detail ? ` The provider said: ${detail}` : '';
  if (status === 401 || status === 403) {
    return {
      kind: 'auth',
      message: `The model provider rejected the credentials (HTTP ${status}). Check ${keySource}.${said}`,
    };
  }
  if (status === 429) {
    return {
      kind: 'rate_limit',
      message: `The model provider is rate limiting requests (HTTP 429); retries were exhausted. Try again later.${said}`,
    };
  }
  if (CONTEXT_OVERFLOW.test(detail) && (status === 400 || status === 413 || status === 422)) {
    return {
      kind: 'context_overflow',
      message: `The conversation no longer fits the model's context window (HTTP ${status}). Shorten it with /compress (RPC session.compress), or start a new conversation with /new.${said}`,
    };
  }
  if (status >= 500) {
    return {
      kind: 'server',
      message: `The model provider failed with HTTP ${status}; retries were exhausted.${said}`,
    };
  }
  return {
    kind: 'bad_response',
    message: `The model provider refused the request (HTTP ${status}).${said}`,
  };
}
