/** Shared plumbing of the PostgreSQL store's actions: session ids and existence checks. */
import { randomBytes } from 'node:crypto';
import { NotFoundError } from '../../domain/errors.js';
import { newSessionId } from '../../domain/session/lifecycle.js';
import type { Sql } from './database.js';
import * as sessions from './ops/sessions.js';

export function newId(now: Date): string {
  return newSessionId(now, randomBytes(4).toString('hex'));
}

export async function requireSession(sql: Sql, sessionId: string): Promise<void> {
  if ((await sessions.readSession(sql, sessionId)) === null) {
    throw new NotFoundError(`no stored session ${JSON.stringify(sessionId)}`);
  }
}
