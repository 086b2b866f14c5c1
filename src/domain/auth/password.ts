/**
 * Owner passwords (dashboard login) are stored only as a slow, salted scrypt hash:
 * `scrypt$<N>$<r>$<p>$<salt b64>$<hash b64>`. Verification is constant-time.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const KEY_LENGTH = 32;

/**
 * The shortest dashboard password `gatehouse passwd` accepts, in characters (code points). With
 * the login limiter's backoff, 12 characters put guessing far out of reach.
 */
export const MIN_PASSWORD_LENGTH = 12;

/** Why `password` may not become the owner's password, or null when it may. */
export function passwordProblem(password: string): string | null {
  const length = [...password].length;
  if (length >= MIN_PASSWORD_LENGTH) return null;
  return length === 0
    ? `the password is empty: use at least ${MIN_PASSWORD_LENGTH} characters`
    : `the password is too short (${length} character${length === 1 ? '' : 's'}): use at least ${MIN_PASSWORD_LENGTH} characters`;
}
const DEFAULT_COST = { N: 1 << 15, r: 8, p: 1 };

function scrypt(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCallback(password, salt, KEY_LENGTH, options, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

function scryptOptions(cost: { N: number; r: number; p: number }): ScryptOptions {
  return { ...cost, maxmem: 128 * cost.N * cost.r * 2 };
}

export async function hashPassword(password: string, cost = DEFAULT_COST): Promise<string> {
  if (password.length === 0) throw new Error('password must not be empty');
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, scryptOptions(cost));
  return ['scrypt', cost.N, cost.r, cost.p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** True when `password` matches `stored`; false for a wrong password or a malformed hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  if (!Number.isInteger(N) || !Number.isInteger(r) || !Number.isInteger(p)) return false;
  const salt = Buffer.from(parts[4]!, 'base64');
  const expected = Buffer.from(parts[5]!, 'base64');
  if (expected.length !== KEY_LENGTH) return false;
  const key = await scrypt(password, salt, scryptOptions({ N: N!, r: r!, p: p! }));
  return timingSafeEqual(key, expected);
}
