/**
 * The behaviour every DelegationStore backend must show (migration 028, issue 28), through the
 * contract only: a delegation is added once per (parent, request id); it moves starting → running →
 * reported, or to stopped, and an ended one moves no more (the guards a crash-repeated step relies on).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DelegationRow, DelegationStore } from '../../src/domain/ports/delegation-store.js';

export interface DelegationHarness {
  store: DelegationStore;
  cleanup(): Promise<void>;
}

const row = (over: Partial<DelegationRow>): DelegationRow => ({
  delegation_id: 'dlg_1',
  profile: 'default',
  parent_id: 'p1',
  request_id: 'r1',
  owner: '{"subject":"native:owner"}',
  task: 'look it up',
  launch: '{"cwd":"/tmp"}',
  depth: 1,
  state: 'starting',
  child_id: null,
  child_admission_id: null,
  outcome: null,
  detail: null,
  result_admission_id: null,
  kept: false,
  created_at: '2026-12-06T12:00:00.000Z',
  ended_at: null,
  ...over,
});

export function runDelegationStoreSuite(name: string, open: () => Promise<DelegationHarness>): void {
  describe(`${name}: DelegationStore behaviour`, () => {
    let h: DelegationHarness;
    beforeEach(async () => {
      h = await open();
    });
    afterEach(() => h.cleanup());

    it('adds a delegation once per parent and request id, and lists it per parent and as open', async () => {
      expect(await h.store.addDelegation(row({}))).toMatchObject({ kind: 'added' });
      const again = await h.store.addDelegation(row({ delegation_id: 'dlg_2', task: 'other' }));
      expect(again).toMatchObject({
        kind: 'existing',
        delegation: { delegation_id: 'dlg_1', task: 'look it up' },
      });
      await h.store.addDelegation(
        row({ delegation_id: 'dlg_3', parent_id: 'p2', created_at: '2026-12-06T12:00:01.000Z' }),
      );
      expect((await h.store.listDelegations('default', 'p1')).map((d) => d.delegation_id)).toEqual(['dlg_1']);
      expect((await h.store.listDelegations('default', null)).map((d) => d.delegation_id)).toEqual([
        'dlg_1',
        'dlg_3',
      ]);
      expect(await h.store.listDelegations('other', null)).toEqual([]);
      expect((await h.store.openDelegations('default')).map((d) => d.delegation_id)).toEqual([
        'dlg_1',
        'dlg_3',
      ]);
      expect(await h.store.getDelegation('dlg_1')).toEqual(row({}));
      expect(await h.store.getDelegation('dlg_9')).toBeNull();
    });

    it('moves starting → running → reported once; an ended delegation is neither reported nor stopped again', async () => {
      await h.store.addDelegation(row({}));
      await h.store.markRunning('dlg_1', 'child-1', 'adm-1');
      expect(await h.store.delegationOfChild('child-1')).toMatchObject({
        delegation_id: 'dlg_1',
        state: 'running',
        child_admission_id: 'adm-1',
      });
      // A repeated step finds it running already: nothing changes.
      await h.store.markRunning('dlg_1', 'child-2', 'adm-2');
      expect(await h.store.getDelegation('dlg_1')).toMatchObject({ child_id: 'child-1' });
      const at = '2026-12-06T12:05:00.000Z';
      expect(await h.store.markReported('dlg_1', 'completed', null, 'adm-p', at)).toBe(true);
      expect(await h.store.markReported('dlg_1', 'failed', 'again', 'adm-q', at)).toBe(false);
      expect(await h.store.markStopped('dlg_1', 'too late', at)).toBe(false);
      expect(await h.store.getDelegation('dlg_1')).toMatchObject({
        state: 'reported',
        outcome: 'completed',
        result_admission_id: 'adm-p',
        ended_at: at,
      });
      expect(await h.store.openDelegations('default')).toEqual([]);
    });

    it('stops an open delegation once, and keeps or un-keeps it', async () => {
      await h.store.addDelegation(row({}));
      await h.store.setKept('dlg_1', true);
      expect(await h.store.getDelegation('dlg_1')).toMatchObject({ kept: true });
      await h.store.setKept('dlg_1', false);
      expect(await h.store.getDelegation('dlg_1')).toMatchObject({ kept: false });
      const at = '2026-12-06T12:05:00.000Z';
      expect(await h.store.markStopped('dlg_1', 'stopped by native:owner', at)).toBe(true);
      expect(await h.store.markStopped('dlg_1', 'again', at)).toBe(false);
      expect(await h.store.markReported('dlg_1', 'completed', null, 'adm-p', at)).toBe(false);
      expect(await h.store.getDelegation('dlg_1')).toMatchObject({
        state: 'stopped',
        outcome: 'stopped',
        detail: 'stopped by native:owner',
        result_admission_id: null,
      });
    });
  });
}
