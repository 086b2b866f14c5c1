/**
 * The endpoint's bearer keys (`api_server.keys`): each is bound to a principal of its own,
 * `api:<name>` with provider `api_key`, holding exactly the scopes configured. Keys are held as
 * SHA-256 digests and compared in constant time; a key never reaches a log or the disk.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { makePrincipal, type Capability, type Principal } from '../../domain/auth/principal.js';
import { OpenAiError } from './wire.js';

export interface ApiKeyGrant {
  /** The key's name in the config: its principal is `api:<name>`. */
  name: string;
  key: string;
  scopes: readonly Capability[];
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

export class ApiKeys {
  private readonly grants: { digest: Buffer; principal: Principal }[];

  constructor(grants: readonly ApiKeyGrant[], profile: string) {
    this.grants = grants.map((grant) => ({
      digest: digest(grant.key),
      principal: makePrincipal(`api:${grant.name}`, 'api_key', profile, grant.scopes),
    }));
  }

  /** The principal of the request's `Authorization: Bearer <key>`, or a 401 in OpenAI's shape. */
  authenticate(req: IncomingMessage): Principal {
    const header = req.headers.authorization;
    const offered = header === undefined ? null : (/^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] ?? null);
    if (offered === null)
      throw new OpenAiError(
        401,
        'invalid_request_error',
        'missing_api_key',
        'no API key: send Authorization: Bearer <key>, a key from api_server.keys',
      );
    const offeredDigest = digest(offered);
    let found: Principal | null = null;
    // Every grant is compared, so the time taken says nothing of which key came close.
    for (const grant of this.grants)
      if (timingSafeEqual(grant.digest, offeredDigest)) found = grant.principal;
    if (found === null)
      throw new OpenAiError(401, 'invalid_request_error', 'invalid_api_key', 'incorrect API key provided');
    return found;
  }
}
