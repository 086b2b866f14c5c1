/**
 * Issue 30: who an OpenID Connect sign-in is (the pure rules over the provider's claims), the
 * `auth.oidc` section (refused when it could not work or would let nobody in), and the client
 * secret read from its variable and scrubbed from logs. The flow itself is proven against a real
 * provider in test/e2e/dashboard-oidc.test.ts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/daemon/config.js';
import { oidcRules } from '../../../src/daemon/config-oidc.js';
import { configSecrets } from '../../../src/daemon/config-secrets.js';
import { openOidc } from '../../../src/daemon/services/oidc-setup.js';
import { identityFor, oidcSubject, roleFor, type RoleRules } from '../../../src/domain/auth/oidc-roles.js';
import { DashboardLogins } from '../../../src/domain/auth/logins.js';

const FILE = '/home/me/.gatehouse/config.yaml';
const SECTION = `auth:
  oidc:
    issuer: https://login.example.com
    client_id: gatehouse
    client_secret_env: OIDC_SECRET
    redirect_url: https://gate.example.com/auth/oidc/callback
    operators: {emails: [Olga@Example.com], groups: [gate-admins]}
    members: {domains: [example.com]}
`;

const RULES: RoleRules = {
  operators: { emails: ['olga@example.com'], domains: [], groups: ['gate-admins'] },
  members: { emails: [], domains: ['example.com'], groups: ['contractors'] },
  groupsClaim: 'groups',
};

function refusal(yaml: string): string {
  try {
    parseConfig(yaml, FILE);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('OIDC role rules', () => {
  it('gives operators first, then members, and refuses everyone else', () => {
    expect(roleFor({ sub: 'a', email: 'OLGA@example.com', email_verified: true }, RULES)).toBe('operator');
    expect(roleFor({ sub: 'b', email: 'mia@example.com', email_verified: true }, RULES)).toBe('member');
    expect(roleFor({ sub: 'c', groups: ['gate-admins'] }, RULES)).toBe('operator');
    expect(roleFor({ sub: 'd', groups: 'contractors' }, RULES)).toBe('member');
    expect(roleFor({ sub: 'e', email: 'eve@example.org', email_verified: true }, RULES)).toBeNull();
    expect(roleFor({ sub: 'f' }, RULES)).toBeNull();
  });

  it('trusts only an e-mail the provider verified, and no look-alike domain', () => {
    expect(roleFor({ sub: 'm', email: 'olga@example.com', email_verified: false }, RULES)).toBeNull();
    expect(roleFor({ sub: 'm', email: 'olga@example.com' }, RULES)).toBeNull();
    expect(roleFor({ sub: 'm', email: 'x@evilexample.com', email_verified: true }, RULES)).toBeNull();
    expect(roleFor({ sub: 'm', email: 'x@sub.example.com', email_verified: true }, RULES)).toBeNull();
  });

  it('names the person by issuer and sub, never by e-mail', () => {
    const decided = identityFor(
      'https://login.example.com/',
      { sub: '248289761001', email: 'mia@example.com', email_verified: true, name: 'Mia' },
      RULES,
    );
    expect(decided).toEqual({
      ok: true,
      identity: {
        subject: 'oidc:https://login.example.com#248289761001',
        name: 'Mia',
        role: 'member',
        path: 'oidc',
      },
    });
    expect(identityFor('https://login.example.com', { sub: 'x' }, RULES)).toEqual({
      ok: false,
      subject: 'oidc:https://login.example.com#x',
    });
  });
});

describe('auth.oidc', () => {
  it('reads the rules and the secret from its variable, which logs never show', async () => {
    const { config } = parseConfig(SECTION, FILE);
    expect(oidcRules(config.auth.oidc!)).toEqual({
      operators: { emails: ['Olga@Example.com'], domains: [], groups: ['gate-admins'] },
      members: { emails: [], domains: ['example.com'], groups: [] },
      groupsClaim: 'groups',
    });
    expect(config.auth.oidc!.scopes).toEqual(['openid', 'email', 'profile']);
    expect(await openOidc(config, { OIDC_SECRET: 'the-client-secret' })).not.toBeNull();
    expect(configSecrets(config, { OIDC_SECRET: 'the-client-secret' })).toContain('the-client-secret');
    await expect(openOidc(config, {})).rejects.toThrow(
      /client_secret_env names \$OIDC_SECRET, which is not set/,
    );
    expect(await openOidc(parseConfig('', FILE).config, {})).toBeNull();
  });

  it('refuses a section that could not work or would let nobody in', () => {
    expect(refusal(SECTION.replace('/auth/oidc/callback', '/callback'))).toMatch(
      /must end in \/auth\/oidc\/callback/,
    );
    expect(refusal(SECTION.replace('https://login.example.com', 'http://login.example.com'))).toMatch(
      /must be https/,
    );
    expect(refusal(SECTION.replace(/ {4}operators:.*\n {4}members:.*\n/, ''))).toMatch(/lets nobody in/);
    expect(refusal(SECTION.replace('client_id: gatehouse', 'client_id: gatehouse\n    tenant: x'))).toMatch(
      /tenant/,
    );
    expect(refusal(`${SECTION}    scopes: [email]\n`)).toMatch(/must include openid/);
  });
});

describe('docs/identity.md', () => {
  it("the worked example's config is accepted as written and lets its people in as documented", async () => {
    const doc = readFileSync(new URL('../../../docs/identity.md', import.meta.url), 'utf8');
    const example = doc.slice(doc.indexOf('### A worked example'));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(example)![1]!;
    const { config } = parseConfig(yaml, FILE);
    const section = config.auth.oidc!;
    expect(await openOidc(config, { GATEHOUSE_OIDC_SECRET: 'from-the-provider' })).not.toBeNull();
    const rules = oidcRules(section);
    expect(roleFor({ sub: '1', email: 'olga@example.com', email_verified: true }, rules)).toBe('operator');
    expect(roleFor({ sub: '2', groups: ['contractors'] }, rules)).toBe('member');
    expect(roleFor({ sub: '3', email: 'eve@elsewhere.test', email_verified: true }, rules)).toBeNull();
    // The share command's subject is the one a sign-in of that provider gets.
    expect(example).toContain(`'${oidcSubject(section.issuer, '248289761001')}'`);
  });
});

describe('dashboard logins', () => {
  it('keep an OIDC login across a password change, and end password logins', () => {
    const logins = new DashboardLogins();
    const owner = logins.open();
    const mia = logins.open({ subject: 'oidc:https://x#mia', name: 'Mia', role: 'member', path: 'oidc' });
    expect(logins.endAll('another-version')).toBe(1);
    expect(logins.lookup(owner)).toBe('forged');
    const found = logins.find(mia);
    expect(found.state === 'ok' && found.identity.role).toBe('member');
    expect(logins.end(mia)).toBe(found.state === 'ok' ? found.id : 'never');
  });
});
