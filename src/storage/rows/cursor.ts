/** Opaque page cursors for listSessions: the (updated_at, session_key) of the last entry shown. */
import { InvalidParamsError } from '../../domain/errors.js';

export function encodeCursor(entry: { updated_at: string; session_key: string }): string {
  return Buffer.from(JSON.stringify([entry.updated_at, entry.session_key])).toString('base64url');
}

export function decodeCursor(cursor: string): { updatedAt: string; sessionKey: string } {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2 && value.every((v) => typeof v === 'string')) {
      return { updatedAt: value[0] as string, sessionKey: value[1] as string };
    }
  } catch {
    // fall through to the typed error
  }
  throw new InvalidParamsError('listSessions cursor is not one this store issued');
}
