import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { source } from '../../shared/fixtures.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-model-'));
const store = SqliteSessionStore.open(path.join(dir, 'state.db'));
afterAll(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

type Step =
  | { op: 'append'; role: 'user' | 'assistant' | 'tool'; text: string }
  | { op: 'rewind'; n: number }
  | { op: 'rewrite'; texts: string[] };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('append' as const),
      role: fc.constantFrom('user', 'assistant', 'tool'),
      text: fc.string(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('rewind' as const), n: fc.integer({ min: 1, max: 4 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('rewrite' as const),
      texts: fc.array(fc.string(), { maxLength: 3 }),
    }),
  },
);

/** The model: a plain list. Rewind drops from the n-th last user message on. */
function rewindModel(list: TranscriptMessage[], n: number): { kept: TranscriptMessage[]; result: object } {
  const userIndexes = list.flatMap((m, i) => (m.role === 'user' ? [i] : []));
  const undone = Math.min(n, userIndexes.length);
  if (undone === 0) return { kept: list, result: { rewound_count: 0, turns_undone: 0, target_text: null } };
  const from = userIndexes[userIndexes.length - undone]!;
  return {
    kept: list.slice(0, from),
    result: { rewound_count: list.length - from, turns_undone: undone, target_text: list[from]!.content },
  };
}

describe('STO-2 transcript operations agree with a list model', () => {
  it('append, rewind and rewrite in any order leave loadTranscript equal to the model', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 25 }), async (steps) => {
        const sid = (await store.getOrCreateSession(`k:${run++}`, source())).entry.session_id;
        let model: TranscriptMessage[] = [];
        for (const s of steps) {
          if (s.op === 'append') {
            const m: TranscriptMessage = { role: s.role, content: s.text };
            await store.appendToTranscript(sid, m);
            model.push(m);
          } else if (s.op === 'rewind') {
            const expected = rewindModel(model, s.n);
            expect(await store.rewindSession(sid, s.n)).toEqual(expected.result);
            model = expected.kept;
          } else {
            model = s.texts.map((t) => ({ role: 'system', content: t }));
            await store.rewriteTranscript(sid, model);
          }
        }
        const loaded = await store.loadTranscript(sid);
        expect(loaded.map((m) => ({ role: m.role, content: m.content }))).toEqual(model);
      }),
      { numRuns: 40 },
    );
  });
});
