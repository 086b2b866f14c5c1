/**
 * Opens the dashboard's OpenID Connect sign-in when `auth.oidc` is configured (else null): reads the
 * client secret from the variable `client_secret_env` names, refusing to start when it is named but
 * unset. The provider itself is first asked at the first sign-in, so a provider that is down does
 * not keep the daemon from starting.
 */
import { oidcRules } from '../config-oidc.js';
import type { GatehouseConfig } from '../config-schema.js';
import { DaemonError } from '../errors.js';
import type { OidcSignIn } from '../../surfaces/rpc/oidc-routes.js';

/** openid-client is loaded only when sign-in is configured (a daemon without it never loads it). */
export async function openOidc(config: GatehouseConfig, env: NodeJS.ProcessEnv): Promise<OidcSignIn | null> {
  const section = config.auth.oidc;
  if (section === undefined) return null;
  const name = section.client_secret_env;
  const secret = name === undefined ? null : (env[name] ?? '');
  if (secret === '')
    throw new DaemonError(
      'config_invalid',
      `auth.oidc.client_secret_env names $${name}, which is not set: set it to the client secret the ` +
        'identity provider issued, or remove client_secret_env for a public client',
    );
  const { createOidcSignIn } = await import('../../surfaces/rpc/oidc-routes.js');
  return createOidcSignIn({
    issuer: section.issuer,
    clientId: section.client_id,
    clientSecret: secret,
    redirectUrl: section.redirect_url,
    scopes: section.scopes,
    rules: oidcRules(section),
  });
}
