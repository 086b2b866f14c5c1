/**
 * Dashboard logins kept in `<profile>/dashboard-logins.json` (owner-only): only the SHA-256 of each
 * cookie token, its expiry, the password version it was opened with and an OpenID Connect login's
 * identity (subject, name, role), never a token, so the file lets nobody log in. A browser that was
 * logged in before a restart stays logged in, and its page reattaches by itself.
 */
import { readFileSync } from 'node:fs';
import type { LoginIdentity, LoginStore, StoredLogin } from '../domain/auth/logins.js';
import { writeFileAtomic } from './home.js';

function isIdentity(value: unknown): value is LoginIdentity {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v['subject'] === 'string' &&
    typeof v['name'] === 'string' &&
    (v['role'] === 'operator' || v['role'] === 'member') &&
    (v['path'] === 'password' || v['path'] === 'oidc')
  );
}

export function fileLoginStore(file: string, onError: (error: unknown) => void): LoginStore {
  return {
    load() {
      try {
        const parsed = JSON.parse(readFileSync(file, 'utf8')) as unknown;
        if (!Array.isArray(parsed)) return [];
        // A login saved without a password version (before issue 25) is not loaded: log in again.
        return parsed.filter(
          (e): e is StoredLogin =>
            Array.isArray(e) &&
            typeof e[0] === 'string' &&
            /^[0-9a-f]{64}$/.test(e[0]) &&
            typeof e[1] === 'number' &&
            typeof e[2] === 'string' &&
            (e.length === 3 || isIdentity(e[3])),
        );
      } catch {
        return []; // missing or unreadable: everyone logs in again
      }
    },
    save(logins) {
      try {
        writeFileAtomic(file, `${JSON.stringify(logins)}\n`, 0o600);
      } catch (error) {
        onError(error);
      }
    },
  };
}
