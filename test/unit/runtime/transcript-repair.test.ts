import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';
import { closeDanglingToolCalls, GATEWAY_STOP_MARKER } from '../../../src/runtime/transcript-repair.js';
import { transcriptProblems } from './helpers.js';

const user = (content: string): TranscriptMessage => ({ role: 'user', content });
const calls = (...ids: string[]): TranscriptMessage => ({
  role: 'assistant',
  content: null,
  admission_id: 'adm-7',
  tool_calls: ids.map((id) => ({ id, type: 'function', function: { name: 'terminal', arguments: '{}' } })),
});
const result = (id: string, content = `out ${id}`): TranscriptMessage => ({
  role: 'tool',
  tool_call_id: id,
  name: 'terminal',
  content,
});

describe('RUN-1 closeDanglingToolCalls: crash leftovers become explicit results', () => {
  it('adds one synthetic result after the existing ones, in call order, saying the effect is unknown', () => {
    const input = [user('go'), calls('a', 'b', 'c'), result('a')];
    const { repaired, added, appendable } = closeDanglingToolCalls(input);
    expect(added.map((m) => m.tool_call_id)).toEqual(['b', 'c']);
    expect(repaired).toEqual([...input, ...added]);
    expect(appendable).toBe(true);
    for (const m of added) {
      expect(m).toMatchObject({ role: 'tool', name: 'terminal', admission_id: 'adm-7' });
      expect(m.content).toContain(GATEWAY_STOP_MARKER);
      expect(m.content).toMatch(/effect is unknown/);
    }
    expect(transcriptProblems(repaired)).toEqual([]);
  });

  it('leaves a well-formed transcript untouched and is idempotent', () => {
    const clean = [user('go'), calls('a'), result('a'), { role: 'assistant', content: 'done' } as const];
    expect(closeDanglingToolCalls(clean)).toEqual({ repaired: clean, added: [], appendable: true });
    const once = closeDanglingToolCalls([user('go'), calls('x')]).repaired;
    expect(closeDanglingToolCalls(once).added).toEqual([]);
  });

  it('places a result mid-transcript when later messages exist, and says it cannot be appended', () => {
    const input = [user('go'), calls('a'), user('next'), { role: 'assistant', content: 'hi' } as const];
    const { repaired, added, appendable } = closeDanglingToolCalls(input);
    expect(repaired.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant']);
    expect(added).toHaveLength(1);
    expect(appendable).toBe(false);
  });

  it('never answers a call twice, even when its result is out of place', () => {
    const input = [user('go'), calls('a', 'b'), user('x'), result('a')];
    const { added } = closeDanglingToolCalls(input);
    expect(added.map((m) => m.tool_call_id)).toEqual(['b']);
  });

  it('property: every call ends with exactly one result, input order is kept, a second pass adds nothing', () => {
    const step = fc.oneof(
      fc.constant<'user'>('user'),
      fc.record({ calls: fc.integer({ min: 1, max: 3 }), answered: fc.integer({ min: 0, max: 3 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 8 }), (steps) => {
        let n = 0;
        const input: TranscriptMessage[] = [];
        for (const s of steps) {
          if (s === 'user') {
            input.push(user('u'));
            continue;
          }
          const ids = Array.from({ length: s.calls }, () => `c${n++}`);
          input.push(calls(...ids));
          for (const id of ids.slice(0, s.answered)) input.push(result(id));
        }
        const { repaired, added } = closeDanglingToolCalls(input);
        expect(transcriptProblems(repaired)).toEqual([]);
        expect(repaired.filter((m) => !added.includes(m))).toEqual(input);
        expect(closeDanglingToolCalls(repaired).added).toEqual([]);
      }),
    );
  });
});
