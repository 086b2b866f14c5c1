/**
 * A whole transcript for a reply (session.resume, session.history): a long one serialized off the
 * event loop when the reply is only written as JSON and the store can (domain/json-text.ts), else
 * as objects.
 */
import type { SessionStore, StoredMessage, TranscriptJsonForm } from '../ports/session-store.js';
import type { JsonText } from '../json-text.js';

/** How a reply will be used. */
export interface ReplyOptions {
  /**
   * The reply is only written as JSON (the RPC surface): a whole transcript may come already
   * serialized (domain/json-text.ts), read off the event loop when the store can.
   */
  serialized?: boolean;
}

/**
 * The transcript of `sessionId`, a long one serialized when `options` allow it. Should the store's
 * thread fail, the objects are read instead: the reply is the same, only its cost moves back to
 * the loop.
 */
export async function wholeTranscript(
  sessions: Pick<SessionStore, 'loadTranscript' | 'loadWholeTranscript'>,
  sessionId: string,
  form: TranscriptJsonForm,
  options: ReplyOptions,
): Promise<StoredMessage[] | JsonText> {
  if (options.serialized && sessions.loadWholeTranscript) {
    try {
      return await sessions.loadWholeTranscript(sessionId, form);
    } catch {
      // Read on the loop below.
    }
  }
  return sessions.loadTranscript(sessionId);
}
