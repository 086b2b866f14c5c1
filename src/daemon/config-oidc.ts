/**
 * `auth.oidc` (issue 30, docs/identity.md): the dashboard's sign-in through an OpenID Connect
 * provider. The client secret is read from the variable `client_secret_env` names, never the file.
 * Who may sign in is decided by the rules under `operators` and `members`; everyone else is refused.
 */
import { z } from 'zod';
import type { RoleRules } from '../domain/auth/oidc-roles.js';
import { envName } from './config-providers.js';

/** Where the provider sends the browser back: this path on the daemon's listener. */
export const OIDC_CALLBACK_PATH = '/auth/oidc/callback';

const list = (what: string) =>
  z
    .array(z.string({ error: `${what} must be a list` }).min(1, { error: `${what}: empty entry` }), {
      error: `${what} must be a list`,
    })
    .default([]);

const rule = (what: string) =>
  z
    .strictObject({
      emails: list(`${what}.emails`),
      domains: list(`${what}.domains`),
      groups: list(`${what}.groups`),
    })
    .prefault({});

const httpUrl = (what: string) =>
  z.string({ error: `${what} must be a URL` }).refine(
    (value) => {
      try {
        const url = new URL(value);
        return url.protocol === 'https:' || url.protocol === 'http:';
      } catch {
        return false;
      }
    },
    { error: `${what} must be an http(s) URL` },
  );

export const oidcSchema = z
  .strictObject({
    /** The provider's issuer URL; its /.well-known/openid-configuration is read at the first sign-in. */
    issuer: httpUrl('auth.oidc.issuer'),
    client_id: z.string({ error: 'auth.oidc.client_id must be a string' }).min(1),
    /** The NAME of the variable holding the client secret; absent: a public client (PKCE only). */
    client_secret_env: envName.optional(),
    /** This gateway's callback as the browser reaches it, e.g. https://gate.example.com/auth/oidc/callback. */
    redirect_url: httpUrl('auth.oidc.redirect_url'),
    scopes: z
      .array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, { error: 'auth.oidc.scopes: not a scope name' }))
      .default(['openid', 'email', 'profile']),
    /** The claim holding the person's groups. */
    groups_claim: z.string().min(1).default('groups'),
    operators: rule('auth.oidc.operators'),
    members: rule('auth.oidc.members'),
  })
  .superRefine((section, ctx) => {
    const url = new URL(section.redirect_url);
    if (url.pathname !== OIDC_CALLBACK_PATH || url.search !== '' || url.hash !== '')
      ctx.addIssue({
        code: 'custom',
        path: ['redirect_url'],
        message: `must end in ${OIDC_CALLBACK_PATH} (the gateway's callback), e.g. https://gate.example.com${OIDC_CALLBACK_PATH}`,
      });
    if (!section.scopes.includes('openid'))
      ctx.addIssue({ code: 'custom', path: ['scopes'], message: 'must include openid' });
    for (const key of ['issuer', 'redirect_url'] as const) {
      const at = new URL(section[key]);
      if (at.protocol === 'http:' && !isLoopbackName(at.hostname))
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: 'must be https (plain http is allowed on a loopback address only)',
        });
    }
    const rules = [section.operators, section.members];
    if (rules.every((r) => r.emails.length + r.domains.length + r.groups.length === 0))
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: 'lets nobody in: give operators or members at least one of emails, domains, groups',
      });
  });

export type OidcConfig = z.output<typeof oidcSchema>;

function isLoopbackName(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

export function oidcRules(section: OidcConfig): RoleRules {
  return { operators: section.operators, members: section.members, groupsClaim: section.groups_claim };
}
