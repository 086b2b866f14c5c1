import { describe, expect, it } from 'vitest';
import { checkLineage, lineageChain, type LineageFacts } from '../../../src/domain/local/lineage.js';
import {
  localSessionKey,
  type CreationReceipt,
  type LineageStep,
} from '../../../src/domain/local/receipt.js';
import { testReceipt } from '../../shared/local-fixtures.js';

const KEY = localSessionKey('L');
const RESET_AT = '2026-12-01T10:00:00.000Z';

/** L --compression--> C --reset--> R, exactly as the store writes it. */
function chain(): { receipt: CreationReceipt; facts: Map<string, LineageFacts | null> } {
  const steps: LineageStep[] = [
    { kind: 'compression', from: 'L', to: 'C', at: '2026-12-01T09:00:00.000Z' },
    { kind: 'reset', from: 'C', to: 'R', at: RESET_AT, request_id: 'r1' },
  ];
  const receipt = { ...testReceipt('L'), current_session_id: 'R', lineage: steps };
  const row = (id: string, over: Partial<LineageFacts>): LineageFacts => ({
    session_id: id,
    session_key: KEY,
    closed_at: null,
    closed_reason: null,
    parent_session_id: null,
    lineage_kind: null,
    children: [],
    ...over,
  });
  const facts = new Map<string, LineageFacts | null>([
    ['L', row('L', { children: ['C'], closed_at: '2026-12-01T09:00:00.000Z', closed_reason: 'compression' })],
    [
      'C',
      row('C', {
        parent_session_id: 'L',
        lineage_kind: 'compression',
        children: ['R'],
        closed_at: RESET_AT,
        closed_reason: 'reset',
      }),
    ],
    ['R', row('R', { parent_session_id: 'C', lineage_kind: 'reset' })],
  ]);
  return { receipt, facts };
}

function edit(facts: Map<string, LineageFacts | null>, id: string, over: Partial<LineageFacts>): void {
  facts.set(id, { ...facts.get(id)!, ...over });
}

describe('LIN-3 lineage validation', () => {
  it('accepts a chain whose every step the store agrees with', () => {
    const { receipt, facts } = chain();
    expect(lineageChain(receipt)).toEqual(['L', 'C', 'R']);
    expect(checkLineage(receipt, facts, KEY)).toEqual({ ok: true });
  });

  it('accepts a child row that records only its parent link (no lineage kind)', () => {
    const { receipt, facts } = chain();
    edit(facts, 'C', { lineage_kind: null });
    expect(checkLineage(receipt, facts, KEY)).toEqual({ ok: true });
  });

  it('accepts a session that never moved (no lineage)', () => {
    const facts = new Map([
      ['L', { ...chain().facts.get('L')!, children: [], closed_at: null, closed_reason: null }],
    ]);
    expect(checkLineage(testReceipt('L'), facts, KEY)).toEqual({ ok: true });
  });

  const cases: [string, (f: Map<string, LineageFacts | null>) => void, string, RegExp][] = [
    [
      'a transcript of the chain is missing',
      (f) => f.set('C', null),
      'broken_lineage',
      /C of the lineage does not exist/,
    ],
    [
      'a transcript lives on another session (copied lineage)',
      (f) => edit(f, 'C', { session_key: localSessionKey('X') }),
      'broken_lineage',
      /C belongs to another session/,
    ],
    [
      'the first transcript claims a parent',
      (f) => edit(f, 'L', { parent_session_id: 'Z' }),
      'broken_lineage',
      /claims a parent Z/,
    ],
    [
      'a compression child does not link to its parent',
      (f) => edit(f, 'C', { parent_session_id: 'Z' }),
      'broken_lineage',
      /compression child C does not link to its parent L/,
    ],
    [
      'a child links with the wrong kind',
      (f) => edit(f, 'R', { lineage_kind: 'compression' }),
      'broken_lineage',
      /reset child R does not link/,
    ],
    [
      'a compression parent has a second child (fork)',
      (f) => edit(f, 'L', { children: ['C', 'F'] }),
      'fork',
      /L has children C, F/,
    ],
    [
      'a parent does not list the recorded child',
      (f) => edit(f, 'L', { children: ['F'] }),
      'fork',
      /the lineage names only C/,
    ],
    [
      'a reset parent is not closed for reset',
      (f) => edit(f, 'C', { closed_reason: 'switched' }),
      'broken_lineage',
      /does not match its closure \(switched/,
    ],
    [
      'a reset parent was closed at another instant',
      (f) => edit(f, 'C', { closed_at: '2026-12-01T11:00:00.000Z' }),
      'broken_lineage',
      /does not match its closure/,
    ],
    [
      'the current transcript has an unrecorded child (fork)',
      (f) => edit(f, 'R', { children: ['F'] }),
      'fork',
      /current transcript R has an unrecorded child F/,
    ],
    [
      'the current transcript is closed',
      (f) => edit(f, 'R', { closed_at: RESET_AT, closed_reason: 'pruned' }),
      'broken_lineage',
      /current transcript R is closed \(pruned\)/,
    ],
  ];

  it.each(cases)('fails closed when %s', (_name, damage, failure, detail) => {
    const { receipt, facts } = chain();
    damage(facts);
    const check = checkLineage(receipt, facts, KEY);
    expect(check).toMatchObject({ ok: false, failure });
    expect(check.ok ? '' : check.detail).toMatch(detail);
  });
});
