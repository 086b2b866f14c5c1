/**
 * Secrets in the configuration: the values to mask when the config is printed, and the values
 * (inline, or read from the environment variables the config names) that loggers scrub from every
 * line. Secrets never reach the disk or a log.
 */
import type { GatehouseConfig } from './config-schema.js';

const MASK = '***';

/** A copy safe to print or log: every secret value replaced, its presence still visible. */
export function maskConfig(config: GatehouseConfig): GatehouseConfig {
  const copy = structuredClone(config);
  if (copy.model?.api_key !== undefined) copy.model.api_key = MASK;
  if (copy.dashboard.password_hash !== undefined) copy.dashboard.password_hash = MASK;
  if (copy.legacy_token.token !== undefined) copy.legacy_token.token = MASK;
  for (const section of Object.values(copy.platforms) as Record<string, unknown>[]) {
    for (const key of Object.keys(section)) if (isSecretKey(key)) section[key] = MASK;
  }
  return copy;
}

/**
 * A platform section (a plugin's own fields included) names its secrets by convention: a key that
 * says token, secret, password or api_key holds one inline (warned against, as for the model), and a
 * key ending in `_env` names the environment variable that holds one.
 */
const SECRET_KEY = /(token|secret|password|api_key)$/i;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) && !key.endsWith('_env');
}

/** Secret values in the config or the environment it names; loggers scrub these from every line. */
export function configSecrets(config: GatehouseConfig, env: NodeJS.ProcessEnv = process.env): string[] {
  const secrets = [config.model?.api_key, config.legacy_token.token];
  if (config.model?.api_key_env) secrets.push(env[config.model.api_key_env]);
  for (const provider of Object.values(config.providers ?? {}))
    if (provider.api_key_env) secrets.push(env[provider.api_key_env]);
  // Nested sections too (platforms.telegram.webhook.secret_token_env).
  const walk = (section: Record<string, unknown>): void => {
    for (const [key, value] of Object.entries(section)) {
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
        walk(value as Record<string, unknown>);
      } else if (typeof value !== 'string') continue;
      else if (key.endsWith('_env')) secrets.push(env[value]);
      else if (isSecretKey(key)) secrets.push(value);
    }
  };
  for (const section of Object.values(config.platforms) as Record<string, unknown>[]) walk(section);
  // The metrics scrape key (metrics.bearer_key_env).
  walk(config.metrics);
  // The collector's header values (telemetry.headers_env: header → variable).
  for (const name of Object.values(config.telemetry.headers_env)) secrets.push(env[name]);
  // The dashboard's OpenID Connect client secret (auth.oidc.client_secret_env).
  const oidcSecret = config.auth.oidc?.client_secret_env;
  if (oidcSecret !== undefined) secrets.push(env[oidcSecret]);
  // The OpenAI-compatible endpoint's bearer keys (api_server.keys.<name>.key_env).
  for (const key of Object.values(config.api_server?.keys ?? {})) secrets.push(env[key.key_env]);
  return secrets.filter((value): value is string => typeof value === 'string' && value.length >= 4);
}
