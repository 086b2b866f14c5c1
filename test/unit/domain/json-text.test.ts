/** A JSON array serialized already (issue 32 aim 3): what it stands for, and what it writes. */
import { describe, expect, it } from 'vitest';
import { JsonText } from '../../../src/domain/json-text.js';

const text = (entries: readonly unknown[], cut = 2): JsonText => {
  const body: Uint8Array[] = [];
  for (let i = 0; i < entries.length; i += cut)
    body.push(
      Buffer.from(
        `${i > 0 ? ',' : ''}${entries
          .slice(i, i + cut)
          .map((e) => JSON.stringify(e))
          .join(',')}`,
      ),
    );
  return new JsonText(entries.length, body);
};

describe('JsonText', () => {
  it('serializes as the array it holds, whole characters across its pieces', () => {
    const entries = [{ a: 'ünï ✓ 😀' }, 'x', 3, null, { b: [1, { c: '"\\' }] }];
    const held = text(entries);
    expect(held.length).toBe(5);
    expect(held.body).toHaveLength(3);
    expect(held.toJSON()).toEqual(entries);
    expect(JSON.stringify({ messages: held })).toBe(JSON.stringify({ messages: entries }));
    expect(JSON.stringify(new JsonText(0, []))).toBe('[]');
  });

  it('prepends entries before its own, and to an empty array without a stray comma', () => {
    const system = { role: 'system', content: 'be brief' };
    expect(
      text([{ role: 'user', content: 'hi' }])
        .prepend([system])
        .toJSON(),
    ).toEqual([system, { role: 'user', content: 'hi' }]);
    const alone = new JsonText(0, []).prepend([system]);
    expect(alone.length).toBe(1);
    expect(JSON.stringify(alone)).toBe(JSON.stringify([system]));
    const held = text([1, 2]);
    expect(held.prepend([])).toBe(held);
  });
  it('tells its maker once that it is released, also through an array prepended to it', () => {
    let released = 0;
    const held = new JsonText(1, [Buffer.from('1')], () => released++);
    const longer = held.prepend([0]);
    longer.release();
    held.release();
    longer.release();
    expect(released).toBe(1);
    expect(longer.toJSON()).toEqual([0, 1]);
  });
});
