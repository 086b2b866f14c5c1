import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';
import {
  composeCompressed,
  DROPPED_NOTE,
  isSummaryMessage,
  planCompression,
  reduceByDropping,
  stubToolOutput,
  SUMMARY_MARKER,
  TOOL_STUB_MARKER,
  tokensOf,
} from '../../../src/runtime/context/compress.js';
import { summaryRequest } from '../../../src/runtime/context/summary-prompt.js';
import { demoSummary } from '../../../src/runtime/demo/summary.js';
import { transcriptProblems } from '../runtime/helpers.js';

/** One exchange: a user message, then a plain answer or rounds of tool calls and a final answer. */
const exchange = fc.record({
  text: fc.string({ minLength: 1, maxLength: 60 }),
  rounds: fc.array(
    fc.record({ calls: fc.integer({ min: 1, max: 3 }), output: fc.integer({ min: 0, max: 900 }) }),
    {
      maxLength: 3,
    },
  ),
});

let ids = 0;
interface Exchange {
  text: string;
  rounds: { calls: number; output: number }[];
}

function transcriptOf(exchanges: Exchange[], open = false): TranscriptMessage[] {
  const out: TranscriptMessage[] = [];
  exchanges.forEach((e, n) => {
    out.push({ role: 'user', content: `${e.text} #${n}` });
    for (const round of e.rounds) {
      const calls = Array.from({ length: round.calls }, () => ({
        id: `call_${++ids}`,
        type: 'function' as const,
        function: { name: 'terminal', arguments: '{"command":"ls src/app.ts"}' },
      }));
      out.push({ role: 'assistant', content: null, tool_calls: calls });
      for (const call of calls)
        out.push({
          role: 'tool',
          tool_call_id: call.id,
          name: 'terminal',
          content: 'x'.repeat(round.output),
        });
    }
    // The last exchange may be mid-turn (a compression inside a tool loop): no final answer yet.
    if (!(open && n === exchanges.length - 1)) out.push({ role: 'assistant', content: `answer ${n}` });
  });
  return out;
}

describe('planCompression and composeCompressed', () => {
  it('never separates a tool call from its result, and keeps head, last user message and tail verbatim', () => {
    fc.assert(
      fc.property(
        fc.array(exchange, { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 0, max: 400 }),
        fc.boolean(),
        (exchanges, tailTokens, open) => {
          const messages = transcriptOf(exchanges, open);
          const plan = planCompression(messages, { tailTokens });
          if (plan.kind === 'nothing') return;
          const child = composeCompressed(plan, '## Goal\n- test');
          expect(transcriptProblems(child)).toEqual([]);
          expect(child.slice(0, plan.head.length)).toEqual(messages.slice(0, plan.head.length));
          const lastUser = messages.findLastIndex((m) => m.role === 'user');
          const fromLastUser = messages.slice(lastUser);
          const afterQuestion = fromLastUser.slice(1).reduce((sum, m) => sum + tokensOf(m), 0);
          // The last user message is always kept verbatim, and what follows it in the child is a
          // verbatim suffix of the transcript: all of the turn so far, or (inside a tool loop worth
          // more than the tail) its most recent steps from an assistant message on.
          const question = child.findLastIndex((m) => m.role === 'user' && !isSummaryMessage(m));
          expect(child[question]).toEqual(messages[lastUser]);
          const kept = child.slice(question + 1).filter((m) => !isSummaryMessage(m));
          expect(kept).toEqual(messages.slice(messages.length - kept.length));
          if (afterQuestion <= tailTokens) expect(kept).toEqual(fromLastUser.slice(1));
          else if (kept.length < fromLastUser.length - 1) {
            expect(kept[0]?.role).toBe('assistant');
            expect(kept.reduce((sum, m) => sum + tokensOf(m), 0)).toBeGreaterThanOrEqual(tailTokens);
          }
          const tail = plan.tail.reduce((sum, m) => sum + tokensOf(m), 0);
          expect(tail >= tailTokens || plan.tail.length + plan.head.length + plan.middle.length >= 1).toBe(
            true,
          );
          expect(child.filter(isSummaryMessage)).toHaveLength(1);
          // Old tool outputs reach the summariser as stubs that say what was removed.
          for (const m of plan.middle)
            if (m.role === 'tool' && (m.content ?? '').length > 400)
              expect(m.content).toContain(TOOL_STUB_MARKER);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a later compression updates the previous summary instead of summarising it', () => {
    fc.assert(
      fc.property(
        fc.array(exchange, { minLength: 4, maxLength: 10 }),
        fc.array(exchange, { minLength: 3, maxLength: 8 }),
        (a, b) => {
          const first = planCompression(transcriptOf(a), { tailTokens: 0 });
          if (first.kind === 'nothing') return;
          const compressed = composeCompressed(first, 'FIRST SUMMARY');
          const again = planCompression([...compressed, ...transcriptOf(b)], { tailTokens: 0 });
          if (again.kind === 'nothing') return;
          expect(again.previousSummary).toBe('FIRST SUMMARY');
          expect(again.middle.some(isSummaryMessage)).toBe(false);
          const child = composeCompressed(again, 'SECOND');
          expect(child.filter(isSummaryMessage)).toHaveLength(1);
          expect(transcriptProblems(child)).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a reduction drops whole exchanges oldest first, never splits a tool call from its result, and says so', () => {
    fc.assert(
      fc.property(
        fc.array(exchange, { minLength: 2, maxLength: 12 }),
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 50, max: 3000 }),
        fc.boolean(),
        (exchanges, tailTokens, budget, open) => {
          const messages = transcriptOf(exchanges, open);
          const plan = planCompression(messages, { tailTokens });
          if (plan.kind === 'nothing') return;
          const reduced = reduceByDropping(plan, 'why', budget);
          const child = reduced.messages;
          expect(transcriptProblems(child)).toEqual([]);
          const notes = child.filter(isSummaryMessage);
          expect(notes).toHaveLength(1);
          expect(notes[0]!.content).toContain(`${DROPPED_NOTE} the ${reduced.dropped} oldest messages`);
          expect(reduced.dropped).toBeGreaterThan(0);
          // What is kept is the tail and a suffix of the middle (plus the head), verbatim or stubbed.
          expect(child.slice(-plan.tail.length)).toHaveLength(plan.tail.length);
          const at = child.indexOf(notes[0]!);
          const keptMiddle = child.slice(at + 1, child.length - plan.tail.length);
          expect(keptMiddle.map((m) => m.tool_call_id ?? m.content)).toEqual(
            plan.middle.slice(plan.middle.length - keptMiddle.length).map((m) => m.tool_call_id ?? m.content),
          );
          // Fits, unless the tail (and the note) alone does not: the tail's older tool outputs can
          // be stubbed, the last round's results never (the model is answering them).
          const total = child.reduce((sum, m) => sum + tokensOf(m), 0);
          const lastRound = child.findLastIndex(
            (m) => m.role === 'assistant' && (m.tool_calls ?? []).length > 0,
          );
          const tailFrom = child.length - plan.tail.length;
          const floor =
            tokensOf(notes[0]!) +
            plan.tail.reduce(
              (sum, m, i) => sum + tokensOf(tailFrom + i < lastRound ? stubToolOutput(m) : m),
              0,
            );
          if (floor <= budget * 0.9) expect(total).toBeLessThanOrEqual(budget + tokensOf(notes[0]!));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('has nothing to do when everything is head and tail', () => {
    const messages = transcriptOf([{ text: 'only', rounds: [] }]);
    expect(planCompression(messages, { tailTokens: 0 }).kind).toBe('nothing');
  });

  it('stubs older tool outputs of the tail when the result is still over budget, never the last round', () => {
    const messages = transcriptOf(
      [
        { text: 'a', rounds: [] },
        { text: 'b', rounds: [] },
        {
          text: 'c',
          rounds: [
            { calls: 1, output: 5000 },
            { calls: 1, output: 5000 },
          ],
        },
      ],
      true,
    );
    // A tail worth exactly the open turn: the whole loop is kept, so its outputs are what shrinks.
    const turn = messages.slice(messages.findLastIndex((m) => m.role === 'user') + 1);
    const plan = planCompression(messages, { tailTokens: turn.reduce((sum, m) => sum + tokensOf(m), 0) });
    expect(plan.kind).toBe('plan');
    if (plan.kind !== 'plan') return;
    expect(plan.tail.slice(1)).toEqual(turn);
    const child = composeCompressed(plan, 'S', 100);
    const tools = child.filter((m) => m.role === 'tool');
    expect(tools[0]!.content).toContain(TOOL_STUB_MARKER);
    expect(tools.at(-1)!.content).toBe('x'.repeat(5000));
    expect(transcriptProblems(child)).toEqual([]);
  });
});

describe('the demo summary', () => {
  it('fills the template deterministically and keeps files, requests and the previous summary', () => {
    const middle: TranscriptMessage[] = [
      { role: 'user', content: 'Fix the bug in src/server.ts; you must keep the API stable' },
      { role: 'assistant', content: 'Looking at it.' },
      { role: 'user', content: 'Also update README.md' },
    ];
    const request = summaryRequest(middle, null, 4000);
    const first = demoSummary(request[1]!.content!);
    expect(first).toBe(demoSummary(request[1]!.content!));
    expect(first).toContain('## Goal\n- Fix the bug in src/server.ts');
    expect(first).toContain('- Fix the bug in src/server.ts; you must keep the API stable');
    expect(first).toContain('src/server.ts');
    expect(first).toContain('README.md');
    expect(first).toContain('## In progress\n- answering: Also update README.md');
    const later = demoSummary(
      summaryRequest([{ role: 'user', content: 'now run tests in test/app.test.ts' }], first, 4000)[1]!
        .content!,
    );
    expect(later).toContain('## Goal\n- Fix the bug in src/server.ts');
    expect(later).toContain('src/server.ts');
    expect(later).toContain('test/app.test.ts');
    expect(later).not.toContain(SUMMARY_MARKER);
  });
});
