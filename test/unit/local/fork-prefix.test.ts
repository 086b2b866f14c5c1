import { describe, expect, it } from 'vitest';
import { forkPrefix } from '../../../src/domain/local/manage.js';
import type { StoredMessage } from '../../../src/domain/ports/session-store.js';

let next = 1;
const msg = (m: Omit<StoredMessage, 'id' | 'session_id' | 'timestamp'>): StoredMessage => ({
  ...m,
  id: next++,
  session_id: 'S',
  timestamp: '2026-12-01T00:00:00.000Z',
});
const call = (id: string) => ({
  id,
  type: 'function' as const,
  function: { name: 'terminal', arguments: '{}' },
});

describe('forkPrefix: where a fork ends', () => {
  const user = msg({ role: 'user', content: 'do two things' });
  const asks = msg({ role: 'assistant', content: null, tool_calls: [call('c1'), call('c2')] });
  const r1 = msg({ role: 'tool', content: 'one', tool_call_id: 'c1' });
  const r2 = msg({ role: 'tool', content: 'two', tool_call_id: 'c2' });
  const answer = msg({ role: 'assistant', content: 'done' });
  const later = msg({ role: 'user', content: 'next' });
  const all = [user, asks, r1, r2, answer, later];
  const ids = (list: StoredMessage[] | null) => list?.map((m) => m.id) ?? null;

  it('ends at the message named, or is null when no message has that id', () => {
    expect(ids(forkPrefix(all, answer.id))).toEqual([user.id, asks.id, r1.id, r2.id, answer.id]);
    expect(ids(forkPrefix(all, user.id))).toEqual([user.id]);
    expect(forkPrefix(all, 999)).toBeNull();
  });

  it('never ends between a tool call and its stored results', () => {
    expect(ids(forkPrefix(all, asks.id))).toEqual([user.id, asks.id, r1.id, r2.id]);
    expect(ids(forkPrefix(all, r1.id))).toEqual([user.id, asks.id, r1.id, r2.id]);
    // A call whose result is not stored (the turn stopped there) stays open: nothing else is taken.
    expect(ids(forkPrefix([user, asks, r1, later], asks.id))).toEqual([user.id, asks.id, r1.id]);
  });
});
