/**
 * The environment a tool's process gets: the gateway's own, minus anything that looks like a secret
 * (SPEC RUN-2). The model can run `env`, so whatever passes here may end up in a transcript.
 *
 * Rule (docs/tools.md): a variable is dropped when its name
 *   - starts with GATEHOUSE_ (the gateway's own configuration, tickets and keys), or
 *   - contains KEY, TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL, AUTH, COOKIE or
 *     SESSION (case-insensitive, so OPENAI_API_KEY, GH_TOKEN, AWS_SECRET_ACCESS_KEY,
 *     DATABASE_PASSWORD, NPM_CONFIG__AUTH all go), or
 *   - is one of a few well-known credential carriers (DATABASE_URL, REDIS_URL, AWS_*, …),
 * unless it is on the keep-list of harmless names that happen to match (e.g. SSH_AUTH_SOCK is
 * dropped too: it lends the agent the user's SSH keys). Everything else (PATH, HOME, LANG, TERM,
 * USER, SHELL, TZ, locale and tool settings) passes unchanged.
 */

const SECRET_WORDS =
  /KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE/i;

/** Names that carry credentials without saying so. */
const SECRET_NAMES =
  /^(?:GATEHOUSE_.*|AWS_.*|AZURE_.*|GOOGLE_APPLICATION_CREDENTIALS|.*_URL_WITH_AUTH|DATABASE_URL|REDIS_URL|MONGODB_URI|SENTRY_DSN)$/i;

/** Harmless names the word test would catch. */
const KEEP = new Set(['KEYTIMEOUT', 'XDG_SESSION_TYPE', 'XDG_SESSION_CLASS', 'XDG_SESSION_DESKTOP']);

export function isSecretName(name: string): boolean {
  if (KEEP.has(name)) return false;
  return SECRET_NAMES.test(name) || SECRET_WORDS.test(name);
}

/** A copy of `env` without the variables isSecretName() flags. */
export function scrubEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !isSecretName(name)) out[name] = value;
  }
  return out;
}
