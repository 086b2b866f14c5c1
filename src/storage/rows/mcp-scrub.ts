/**
 * Migration 029's rewrite on SQLite (PostgreSQL's 029 does the same in SQL): the env and header
 * values of sessions' own MCP servers, wherever a row kept them, become "" (the names stay). Each
 * function takes a column's JSON and answers its scrubbed JSON, or null when nothing changes.
 * Written against the JSON as stored, not today's types: a migration reads old rows.
 */

/** The creation_digest of a receipt scrubbed here (domain/local/receipt.ts DIGEST_SCRUBBED). */
const DIGEST_SCRUBBED = 'scrubbed:mcp-values';

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The column's JSON object, or null for text that is not one (a malformed row is left as it is). */
function parsed(text: string): Json | null {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}

/** Each named server with its env and headers values blanked; true when a value was not blank. */
function blankServers(servers: unknown): boolean {
  if (!isObject(servers)) return false;
  let changed = false;
  for (const server of Object.values(servers)) {
    if (!isObject(server)) continue;
    for (const field of ['env', 'headers']) {
      const values = server[field];
      if (!isObject(values)) continue;
      for (const name of Object.keys(values)) {
        if (values[name] !== '') changed = true;
        values[name] = '';
      }
    }
  }
  return changed;
}

/** A creation receipt: its policy's own servers, and the digest that hashed their values. */
export function scrubReceipt(body: string): string | null {
  const receipt = parsed(body);
  const policy = receipt?.['policy'];
  const mcp = isObject(policy) ? policy['mcp_servers'] : undefined;
  if (!receipt || !isObject(mcp) || !blankServers(mcp['own'])) return null;
  receipt['creation_digest'] = DIGEST_SCRUBBED;
  return JSON.stringify(receipt);
}

/** A delegation's stored launch (session.create parameters). */
export function scrubLaunch(launch: string): string | null {
  const params = parsed(launch);
  return params && blankServers(params['mcp_servers']) ? JSON.stringify(params) : null;
}

/** A scheduled job's target: a new session's launch. */
export function scrubJobTarget(target: string): string | null {
  const job = parsed(target);
  const launch = job?.['launch'];
  if (!isObject(launch) || !blankServers(launch['mcp_servers'])) return null;
  return JSON.stringify(job);
}
