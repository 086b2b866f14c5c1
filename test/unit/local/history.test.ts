/** The full history across a lineage (`sessions --show`): where each compression and reset begins. */
import { describe, expect, it } from 'vitest';
import { fullHistory, sessionHistory } from '../../../src/domain/local/history.js';
import { JsonText } from '../../../src/domain/json-text.js';
import type { StoredMessage, TranscriptJsonForm } from '../../../src/domain/ports/session-store.js';
import { testReceipt } from '../../shared/local-fixtures.js';
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

describe('sessionHistory written as JSON (issue 32 aim 3)', () => {
  const stored = (sessionId: string, n: number): StoredMessage[] =>
    Array.from({ length: n }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `message ${i} ✓ 😀`,
      timestamp: '2026-01-01T00:00:00.000Z',
      id: i + 1,
      session_id: sessionId,
    }));
  /** A store whose transcripts are these, both ways, counting what was read how. */
  const store = (transcripts: Record<string, StoredMessage[]>) => {
    const reads = { objects: 0, serialized: 0 };
    return {
      reads,
      loadTranscript: (id: string) => {
        reads.objects++;
        return Promise.resolve(transcripts[id] ?? []);
      },
      loadWholeTranscript: (id: string, form: TranscriptJsonForm) => {
        reads.serialized++;
        expect(form).toBe('stored');
        const messages = transcripts[id] ?? [];
        const body = [Buffer.from(messages.map((m) => JSON.stringify(m)).join(','))];
        return Promise.resolve(new JsonText(messages.length, body));
      },
    };
  };

  it('reads one transcript serialized for both views, and writes the same text as the objects', async () => {
    const receipt = testReceipt('L');
    for (const view of ['model', 'full'] as const) {
      const serialized = store({ L: stored('L', 5) });
      const objects = store({ L: stored('L', 5) });
      const written = await sessionHistory(serialized, receipt, view, { serialized: true });
      const plain = await sessionHistory(objects, receipt, view);
      expect(written.messages).toBeInstanceOf(JsonText);
      expect(serialized.reads).toEqual({ objects: 0, serialized: 1 });
      expect(objects.reads).toEqual({ objects: 1, serialized: 0 });
      expect(JSON.stringify(written)).toBe(JSON.stringify(plain));
    }
  });

  it("reads the objects when the store's thread fails: the same reply, only slower", async () => {
    const failing = { ...store({ L: stored('L', 3) }) };
    failing.loadWholeTranscript = () => Promise.reject(new Error('the transcript reading thread stopped'));
    const receipt = testReceipt('L');
    const written = await sessionHistory(failing, receipt, 'model', { serialized: true });
    const plain = await sessionHistory(store({ L: stored('L', 3) }), receipt, 'model');
    expect(written).toEqual(plain);
    expect(failing.reads.objects).toBe(1);
  });

  it('joins a lineage from the transcripts as objects (the join compares messages)', async () => {
    const receipt = {
      ...testReceipt('L'),
      current_session_id: 'R',
      lineage: [{ kind: 'reset' as const, from: 'L', to: 'R', at: '2026-01-02T00:00:00.000Z' }],
    };
    const both = store({ L: stored('L', 4), R: stored('R', 2) });
    const written = await sessionHistory(both, receipt, 'full', { serialized: true });
    expect(both.reads).toEqual({ objects: 2, serialized: 0 });
    expect((written.messages as StoredMessage[]).map((m) => m.session_id)).toEqual([
      'L',
      'L',
      'L',
      'L',
      'R',
      'R',
    ]);
  });
});
