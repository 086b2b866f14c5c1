/**
 * `gatehouse doctor`'s model checks: each configured provider answers `GET <base_url>/models` with
 * its key, within a bounded time, so an unreachable `base_url`, a refused key or an unset key
 * variable is found before the first message rather than by it. The built-in demo model, started by
 * the gateway itself, needs no check. Messages name the variable, never the key or its value.
 */
import {
  configuredProviders,
  describeKeySource,
  type ProviderSettings,
} from '../../../daemon/config-providers.js';
import type { GatehouseConfig } from '../../../daemon/config-schema.js';
import { oneLine } from '../../../daemon/errors.js';
import type { Check } from './doctor.js';

/** How long one provider may take to answer; doctor must end even when a host never does. */
export const MODEL_CHECK_TIMEOUT_MS = 5_000;

export async function modelChecks(
  config: GatehouseConfig,
  env: NodeJS.ProcessEnv,
  timeoutMs = MODEL_CHECK_TIMEOUT_MS,
): Promise<Check[]> {
  return Promise.all(configuredProviders(config).map((p) => checkProvider(p, env, timeoutMs)));
}

async function checkProvider(
  provider: ProviderSettings,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<Check> {
  const name = `model ${provider.name}`;
  // An empty variable is as good as unset.
  const key =
    provider.api_key ?? ((provider.api_key_env ? env[provider.api_key_env] : undefined) || undefined);
  const source = describeKeySource(provider, env);
  const url = `${provider.base_url.replace(/\/+$/, '')}/models`;
  let status: number;
  try {
    const response = await fetch(url, {
      headers: key ? { authorization: `Bearer ${key}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
    status = response.status;
    await response.body?.cancel();
  } catch (error) {
    const timedOut = error instanceof Error && error.name === 'TimeoutError';
    return {
      name,
      ok: false,
      detail: timedOut
        ? `${url} did not answer within ${timeoutMs / 1000} s`
        : `${url} cannot be reached (${oneLine(causeOf(error))})`,
      fix: 'check base_url (host, port, /v1) and that the model server is running and reachable from here',
    };
  }
  if (status === 401 || status === 403) {
    return {
      name,
      ok: false,
      detail: `${url} refused the key (HTTP ${status}); the key is ${source}`,
      fix: provider.api_key_env
        ? `export ${provider.api_key_env}=<a valid key> where the gateway starts, then restart it`
        : 'set a valid key for this provider',
    };
  }
  if (status >= 400 && status !== 404) {
    // 404: some OpenAI-compatible servers have no model list; they answered, which is what matters.
    return {
      name,
      ok: false,
      detail: `${url} answered HTTP ${status}`,
      fix: 'check base_url and the provider’s status',
    };
  }
  const unsetVariable = key === undefined && provider.api_key_env !== undefined;
  if (unsetVariable) {
    return {
      name,
      ok: false,
      detail: `${url} answers, but the key is ${source}`,
      fix: `export ${provider.api_key_env}=<the key> where the gateway starts`,
    };
  }
  const keyNote = key === undefined ? ', without a key' : `; the key is ${source}`;
  return { name, ok: true, detail: `${url} answers (HTTP ${status})${keyNote}` };
}

/** fetch wraps the network error (ECONNREFUSED, ENOTFOUND) in a generic "fetch failed". */
function causeOf(error: unknown): unknown {
  return error instanceof Error && error.cause !== undefined ? error.cause : error;
}
