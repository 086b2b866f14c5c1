/**
 * Reads the bearer keys of `api_server` (docs/integrations.md) from the variables the config names,
 * refusing to start when one is unset, shorter than 16 characters, or the same as another key's:
 * a key that cannot be told apart from another would run as the wrong principal.
 */
import type { ApiKeyGrant } from '../../surfaces/openai/keys.js';
import type { GatehouseConfig } from '../config-schema.js';
import { DaemonError } from '../errors.js';

/** The grants to serve, or null when the endpoint is off. */
export function apiServerGrants(config: GatehouseConfig, env: NodeJS.ProcessEnv): ApiKeyGrant[] | null {
  const section = config.api_server;
  if (section === undefined || !section.enabled) return null;
  const grants: ApiKeyGrant[] = [];
  const seen = new Map<string, string>();
  for (const [name, key] of Object.entries(section.keys ?? {})) {
    const value = env[key.key_env] ?? '';
    if (value.length < 16) {
      throw new DaemonError(
        'config_invalid',
        `api_server.keys.${name}.key_env names $${key.key_env}, which is ${value === '' ? 'not set' : 'shorter than 16 characters'}: ` +
          'set it to the bearer key, or remove the key from api_server.keys',
      );
    }
    const other = seen.get(value);
    if (other !== undefined)
      throw new DaemonError(
        'config_invalid',
        `api_server.keys.${name} and api_server.keys.${other} hold the same key: give each its own`,
      );
    seen.set(value, name);
    grants.push({ name, key: value, scopes: key.scopes });
  }
  return grants;
}
