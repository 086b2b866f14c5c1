import { describe, expect, it } from 'vitest';
import { checkReceipt, RECEIPT_KIND, type CreationReceipt } from '../../../src/domain/local/receipt.js';

const receipt: CreationReceipt = {
  kind: RECEIPT_KIND,
  logical_id: 'S1',
  current_session_id: 'S1',
  owner: { subject: 'alice', provider: 'native' },
  profile: 'default',
  request_id: 'r1',
  creation_digest: 'd',
  policy: {
    source: 'cli',
    platform: 'cli',
    cwd: '/tmp',
    model: 'm',
    toolsets: [],
    coding_context: null,
    provider: null,
    base_url: null,
    requires_api_key: false,
    reasoning: null,
    max_turns: 10,
    skills: [],
    skills_prompt: null,
    yolo: false,
    checkpoints: false,
    accept_hooks: false,
    pass_session_id: false,
    ignore_rules: false,
    safe_mode: false,
    ignore_user_config: false,
    editor: null,
    title: null,
    hidden: false,
  },
  lineage: [],
  created_at: '2026-01-01T00:00:00Z',
};
const evidence = (over: Partial<CreationReceipt> = {}, routed: string | null = 'S1') => ({
  logicalId: 'S1',
  raw: JSON.stringify({ ...receipt, ...over }),
  routedSessionId: routed,
});

describe('REC-1 receipt validation fails closed', () => {
  it('accepts a receipt that agrees with the store and the profile', () => {
    expect(checkReceipt(evidence(), 'default')).toMatchObject({ ok: true });
  });
  it.each([
    ['missing', { logicalId: 'S1', raw: null, routedSessionId: 'S1' }],
    ['malformed', { logicalId: 'S1', raw: '{"kind":', routedSessionId: 'S1' }],
    [
      'malformed',
      { logicalId: 'S1', raw: JSON.stringify({ ...receipt, owner: null }), routedSessionId: 'S1' },
    ],
    ['copied', { ...evidence(), logicalId: 'S2' }],
    ['foreign_profile', evidence({ profile: 'work' })],
    ['mismatched_route', evidence({}, 'S9')],
    ['mismatched_route', evidence({}, null)],
    ['broken_lineage', evidence({ current_session_id: 'S7' }, 'S7')],
    [
      'broken_lineage',
      evidence(
        { lineage: [{ kind: 'reset', from: 'S0', to: 'S2', at: 'x' }], current_session_id: 'S2' },
        'S2',
      ),
    ],
  ] as const)('refuses a %s receipt', (failure, ev) => {
    expect(checkReceipt(ev, 'default')).toMatchObject({ ok: false, failure });
  });
  it('follows an explicit lineage of compression and reset steps', () => {
    const lineage = [
      { kind: 'compression' as const, from: 'S1', to: 'S2', at: 'x' },
      { kind: 'reset' as const, from: 'S2', to: 'S3', at: 'y' },
    ];
    expect(checkReceipt(evidence({ lineage, current_session_id: 'S3' }, 'S3'), 'default')).toMatchObject({
      ok: true,
    });
  });
});
