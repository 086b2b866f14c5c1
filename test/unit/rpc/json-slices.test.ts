import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonText } from '../../../src/domain/json-text.js';
import { jsonPieces, STRING_PIECE, worthSlicing } from '../../../src/surfaces/rpc/json-slices.js';

const joined = (value: unknown): string => [...jsonPieces(value)].join('');

/** A string of `length` code units made of `unit` repeated, so its pairs fall on every offset. */
const long = (unit: string, length: number): string =>
  unit.repeat(Math.ceil(length / unit.length)).slice(0, length);

describe('jsonPieces: JSON.stringify in pieces (issue 32 aim 3)', () => {
  it('gives the very text of JSON.stringify for awkward values', () => {
    class Keyed {
      toJSON(key: string) {
        return { under: key };
      }
    }
    const nested = { toJSON: () => ({ toJSON: () => 'not called again', kept: 1 }) };
    const sparse: unknown[] = [];
    sparse[5] = 'end';
    const values: unknown[] = [
      'plain',
      'ünïcödé ✓ 日本語 👩‍👩‍👧 \u0000 \u001f \u2028 \u2029 "quoted" \\ back',
      '\ud800 lone high, lone low \udfff, reversed \udc00\ud800',
      {
        a: undefined,
        b: () => 1,
        c: Symbol('s'),
        d: null,
        e: -0,
        f: NaN,
        g: Infinity,
        h: [undefined, () => 1],
      },
      [
        new Date(0),
        new Keyed(),
        { k: new Keyed() },
        nested,
        new Number(3),
        new String('boxed'),
        new Boolean(false),
      ],
      sparse,
      { deep: [[[[[[['seven']]]]]]] },
    ];
    for (const value of values) {
      expect(joined(value)).toBe(JSON.stringify(value));
      // The same value where it is walked (a long array) and not handed whole to JSON.stringify.
      const many = Array.from({ length: 300 }, () => value);
      expect(worthSlicing(many)).toBe(true);
      expect(joined(many)).toBe(JSON.stringify(many));
      expect(joined({ list: many, keyed: new Keyed() })).toBe(
        JSON.stringify({ list: many, keyed: new Keyed() }),
      );
    }
  });

  it('cuts long strings between characters, never inside a surrogate pair', () => {
    for (const offset of [0, 1, 2, 3]) {
      const text = 'x'.repeat(offset) + long('a😀b\u00e9\ud83d\udc4d"\\\n', STRING_PIECE * 3 + 7);
      expect(worthSlicing(text)).toBe(true);
      const pieces = [...jsonPieces({ text })];
      expect(pieces.length).toBeGreaterThan(4);
      expect(pieces.join('')).toBe(JSON.stringify({ text }));
    }
    // A lone surrogate at a cut stays escaped as JSON.stringify escapes it.
    const lone = 'a'.repeat(STRING_PIECE - 1) + '\ud800' + 'b'.repeat(STRING_PIECE);
    expect(joined([lone])).toBe(JSON.stringify([lone]));
  });

  it('walks a long array and an object with many keys entry by entry', () => {
    const history = {
      jsonrpc: '2.0',
      id: 7,
      result: {
        messages: Array.from({ length: 2_000 }, (_, i) => ({
          id: i,
          role: i % 2 ? 'assistant' : 'tool',
          content: `output ${i} ✓`.repeat(i % 7),
          tool_calls: i % 5 ? undefined : [{ id: `c${i}`, function: { name: 'bash', arguments: '{}' } }],
        })),
        wide: Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, i % 3 ? i : undefined])),
      },
    };
    const pieces = [...jsonPieces(history)];
    expect(pieces.length).toBeGreaterThan(2_000);
    expect(pieces.join('')).toBe(JSON.stringify(history));
  });

  it('writes a JsonText as its bytes, never parsing it back, inside the very text of JSON.stringify', () => {
    const messages = [
      { id: 1, content: 'Grüße ✓ 😀' },
      { id: 2, content: null },
      { id: 3, content: '"\\' },
    ];
    const held = new JsonText(3, [
      Buffer.from(JSON.stringify(messages[0])),
      Buffer.from(`,${JSON.stringify(messages[1])},${JSON.stringify(messages[2])}`),
    ]);
    held.toJSON = () => {
      throw new Error('parsed back');
    };
    const reply = { jsonrpc: '2.0', id: 4, result: { session_id: 's', messages: held, message_count: 3 } };
    // Even a short one is worth it: it is written as it is, not walked or parsed.
    expect(worthSlicing(reply)).toBe(true);
    const pieces = [...jsonPieces(reply)];
    expect(pieces.filter((p) => typeof p !== 'string')).toEqual(held.body);
    const bytes = Buffer.concat(pieces.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
    const expected = { ...reply, result: { ...reply.result, messages } };
    expect(bytes.toString('utf8')).toBe(JSON.stringify(expected));
  });

  it('leaves small values to one JSON.stringify call', () => {
    expect(
      worthSlicing({ jsonrpc: '2.0', id: 1, result: { messages: [{ role: 'user', content: 'hi' }] } }),
    ).toBe(false);
    expect([...jsonPieces({ a: [1, 2, 3] })]).toEqual(['{"a":[1,2,3]}']);
  });

  it('throws where JSON.stringify throws: a cycle, a BigInt, nothing to write', () => {
    const cycle: unknown[] = Array.from({ length: 300 }, () => 0);
    cycle.push(cycle);
    expect(() => joined(cycle)).toThrow(TypeError);
    expect(() => joined(Array.from({ length: 300 }, () => 1n))).toThrow(TypeError);
    expect(() => joined(undefined)).toThrow(TypeError);
  });

  it('matches JSON.stringify on random JSON, walked and whole', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: 'binary', maxLength: 40 }), (value, text) => {
        const wrapped = { items: Array.from({ length: 260 }, (_, i) => (i % 2 ? value : text)), value };
        expect(joined(wrapped)).toBe(JSON.stringify(wrapped));
        expect(joined(value)).toBe(JSON.stringify(value));
      }),
      { numRuns: 200 },
    );
  });
});
