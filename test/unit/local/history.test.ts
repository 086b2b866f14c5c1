/** The full history across a lineage (`sessions --show`): where each compression and reset begins. */
import { describe, expect, it } from 'vitest';
import { fullHistory } from '../../../src/domain/local/history.js';
import { SUMMARY_PREAMBLE } from '../../../src/runtime/context/compress.js';
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';

const user = (content: string): TranscriptMessage => ({ role: 'user', content });
const answer = (content: string): TranscriptMessage => ({ role: 'assistant', content });

describe('fullHistory', () => {
  it('issue 26 item 3: marks each compression (with its counts and method) and each reset', () => {
    const first = [user('a'), answer('A'), user('b'), answer('B'), user('c'), answer('C')];
    const compressed = [
      user('a'),
      answer('A'),
      user(`${SUMMARY_PREAMBLE}\n\nS`),
      user('c'),
      answer('C'),
      user('d'),
    ];
    const reset = [user('e'), answer('E')];
    const { messages, boundaries } = fullHistory(
      [
        {
          kind: 'compression',
          from: 'L',
          to: 'C',
          at: '2026-01-01T00:00:00.000Z',
          method: 'dropped',
          dropped: 2,
        },
        { kind: 'reset', from: 'C', to: 'R', at: '2026-01-02T00:00:00.000Z' },
      ],
      [first, compressed, reset],
    );
    expect(messages.map((m) => m.content?.slice(0, 1))).toEqual([
      'a',
      'A',
      'b',
      'B',
      'c',
      'C',
      '[',
      'd',
      'e',
      'E',
    ]);
    expect(boundaries).toEqual([
      {
        index: 6,
        kind: 'compression',
        at: '2026-01-01T00:00:00.000Z',
        messages_before: 6,
        messages_after: 5,
        method: 'dropped',
      },
      { index: 8, kind: 'reset', at: '2026-01-02T00:00:00.000Z' },
    ]);
  });
});
