/**
 * Masks likely secrets in text shown to viewers (the command of an approval prompt, SPEC RUN-3).
 * Each rule keeps enough context (the variable name, the scheme, the first characters of a key's
 * well-known prefix) for a human to recognise what the command does, and hides the secret itself.
 * It is deliberately eager: hiding a harmless long hash costs less than showing a live key.
 */

export const MASK = '***';

interface RedactionRule {
  name: string;
  pattern: RegExp;
  replace: (match: string, ...groups: string[]) => string;
}

/** Names that hold secrets when they appear as `NAME=value`, `--name value` or `"name": "value"`. */
const SECRET_NAME =
  '[A-Za-z0-9_.-]*(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|passphrase|credential|auth(?![a-z])|private[_-]?key|access[_-]?key|session[_-]?key|_key)[A-Za-z0-9_.-]*';

const RULES: readonly RedactionRule[] = [
  {
    name: 'authorization header',
    pattern: /\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
    replace: (_m, scheme) => `${scheme} ${MASK}`,
  },
  {
    name: 'url credentials',
    pattern: /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/@:]+):([^\s/@]+)@/gi,
    replace: (_m, scheme, user) => `${scheme}${user}:${MASK}@`,
  },
  {
    name: 'well-known key prefixes',
    // OpenAI/Anthropic sk-, GitHub ghp_/gho_/ghs_/ghu_/ghr_/github_pat_, Slack xox?-, AWS AKIA,
    // Google AIza, Stripe sk_live_/rk_live_, GitLab glpat-, npm npm_, Hugging Face hf_.
    pattern:
      /\b(sk-(?:ant-|proj-)?|sk_live_|rk_live_|ghp_|gho_|ghs_|ghu_|ghr_|github_pat_|xox[abposr]-|AKIA|ASIA|AIza|glpat-|npm_|hf_)[A-Za-z0-9_-]{8,}/g,
    replace: (_m, prefix) => `${prefix}${MASK}`,
  },
  {
    name: 'secret assignment',
    // FOO_TOKEN=value, export API_KEY="value", password: value
    pattern: new RegExp(`\\b(${SECRET_NAME})(\\s*[=:]\\s*)("[^"]*"|'[^']*'|[^\\s'";&|]+)`, 'gi'),
    replace: (_m, name, sep) => `${name}${sep}${MASK}`,
  },
  {
    name: 'secret option',
    // --password value, --token=value, --api-key value, -p value (mysql-style -psecret too)
    pattern: new RegExp(`(\\s--${SECRET_NAME})(=|\\s+)("[^"]*"|'[^']*'|[^\\s'";&|]+)`, 'gi'),
    replace: (_m, option, sep) => `${option}${sep}${MASK}`,
  },
  {
    name: 'short password option',
    // `-p` means many things (mkdir -p, ssh -p 22); only where it is a password: mysql-style
    // attached `-pSECRET`, and `sshpass -p SECRET`.
    pattern: /\b((?:mysql|mysqldump|mysqladmin|mariadb)\b[^;&|\n]*?\s-p)([^\s'";&|]+)/g,
    replace: (_m, prefix) => `${prefix}${MASK}`,
  },
  {
    name: 'sshpass password',
    pattern: /\b(sshpass\b[^;&|\n]*?\s-p\s*)([^\s'";&|]+)/g,
    replace: (_m, prefix) => `${prefix}${MASK}`,
  },
  {
    name: 'header value',
    pattern:
      /\b(x-api-key|api-key|x-auth-token|authorization|cookie)(\s*:\s*)(?!Bearer\b|Basic\b|Token\b)([^\s'"]+)/gi,
    replace: (_m, name, sep) => `${name}${sep}${MASK}`,
  },
  {
    name: 'long high-entropy string',
    pattern: /[A-Za-z0-9+/_=-]{32,}/g,
    replace: (match) => (looksRandom(match) ? MASK : match),
  },
];

/**
 * A long token mixing letters and digits with no path structure reads as a key. Hex digests of 32+
 * characters are masked too; a path (with `/` segments of words) or a plain word is kept.
 */
function looksRandom(token: string): boolean {
  if (token.includes(MASK)) return false;
  if (/^[a-z]+(?:[-_][a-z]+)*$/i.test(token)) return false;
  if ((token.match(/\//g) ?? []).length >= 2) return false;
  const hasDigit = /\d/.test(token);
  const hasLetter = /[A-Za-z]/.test(token);
  if (!hasDigit || !hasLetter) return false;
  const distinct = new Set(token).size;
  return distinct >= 12;
}

/**
 * Returns `text` with likely secrets replaced by `***`. Idempotent. `keepLongStrings` keeps long
 * random-looking strings that no named rule recognises (an approval prompt shows its payload).
 */
export function redactSecrets(text: string, options: { keepLongStrings?: boolean } = {}): string {
  let out = text;
  for (const rule of RULES) {
    if (options.keepLongStrings === true && rule.name === 'long high-entropy string') continue;
    out = out.replace(rule.pattern, (match: string, ...groups: unknown[]) =>
      rule.replace(match, ...groups.filter((g): g is string => typeof g === 'string')),
    );
  }
  return out;
}
