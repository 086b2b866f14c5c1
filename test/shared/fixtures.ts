/** Fixtures shared by the store behaviour suite and backend-specific tests. */
import type { SessionSourceFields, TranscriptMessage } from '../../src/domain/vocabulary.js';
import type { SessionStore } from '../../src/domain/ports/session-store.js';

export interface StoreHarness {
  store: SessionStore;
  /** Closes the store and opens the same storage again (proves persistence). */
  reopen(): Promise<SessionStore>;
  cleanup(): Promise<void>;
}

export function source(overrides: Partial<SessionSourceFields> = {}): SessionSourceFields {
  return {
    platform: 'telegram',
    chat_id: '1001',
    chat_name: 'Alice',
    chat_type: 'dm',
    user_id: 'u1',
    user_name: 'Alice',
    thread_id: null,
    chat_topic: null,
    user_id_alt: null,
    chat_id_alt: null,
    is_bot: false,
    guild_id: null,
    parent_chat_id: null,
    message_id: null,
    role_authorized: false,
    ...overrides,
  };
}

export const user = (content: string): TranscriptMessage => ({ role: 'user', content });
export const assistant = (content: string): TranscriptMessage => ({ role: 'assistant', content });
export const at = (iso: string) => new Date(iso);
