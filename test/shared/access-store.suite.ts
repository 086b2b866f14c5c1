/**
 * The behaviour every AccessStore backend must show (migration 022, issue 30), through the contract
 * only, plus one raw attempt at the table: a member's share is granted, changed and revoked per
 * session; the audit log lists newest first with its filters and pages, and refuses to be changed.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AccessStore, AuditEntry } from '../../src/domain/ports/access-store.js';

export interface AccessHarness {
  store: AccessStore;
  /** Runs one raw SQL statement against the database (to prove what the store never does). */
  raw(sql: string): Promise<void>;
  cleanup(): Promise<void>;
}

const entry = (over: Partial<AuditEntry>): AuditEntry => ({
  at: '2026-12-06T12:00:00.000Z',
  principal: 'member:alice',
  path: 'native',
  action: 'submitted',
  session_id: 's1',
  outcome: 'ok',
  detail: null,
  ...over,
});

export function runAccessStoreSuite(name: string, open: () => Promise<AccessHarness>): void {
  describe(`${name}: AccessStore behaviour`, () => {
    let h: AccessHarness;
    beforeEach(async () => {
      h = await open();
    });
    afterEach(() => h.cleanup());

    it('a share is granted per session and member, changed by sharing again, and revoked once', async () => {
      const at = '2026-12-06T12:00:00.000Z';
      await h.store.share({
        logical_id: 's1',
        member: 'member:bob',
        level: 'read',
        granted_by: 'native:owner',
        granted_at: at,
      });
      await h.store.share({
        logical_id: 's2',
        member: 'member:bob',
        level: 'full',
        granted_by: 'native:owner',
        granted_at: at,
      });
      await h.store.share({
        logical_id: 's1',
        member: 'member:carol',
        level: 'submit',
        granted_by: 'native:owner',
        granted_at: at,
      });
      expect(await h.store.shareOf('s1', 'member:bob')).toBe('read');
      expect(await h.store.shareOf('s1', 'member:dave')).toBeNull();
      await h.store.share({
        logical_id: 's1',
        member: 'member:bob',
        level: 'submit',
        granted_by: 'dashboard:owner',
        granted_at: at,
      });
      expect(await h.store.shareOf('s1', 'member:bob')).toBe('submit');
      expect(await h.store.sharesOf('member:bob')).toEqual(
        new Map([
          ['s1', 'submit'],
          ['s2', 'full'],
        ]),
      );
      expect((await h.store.sharesOn('s1')).map((s) => [s.member, s.level, s.granted_by])).toEqual([
        ['member:bob', 'submit', 'dashboard:owner'],
        ['member:carol', 'submit', 'native:owner'],
      ]);
      expect(await h.store.unshare('s1', 'member:bob')).toBe(true);
      expect(await h.store.unshare('s1', 'member:bob')).toBe(false);
      expect(await h.store.shareOf('s1', 'member:bob')).toBeNull();
      expect(await h.store.shareOf('s2', 'member:bob')).toBe('full');
    });

    it('a share and its revocation commit their audit rows with them; a row refused takes its action with it', async () => {
      const share = {
        logical_id: 's1',
        member: 'member:bob',
        level: 'read' as const,
        granted_by: 'native:owner',
        granted_at: '2026-12-06T12:00:00.000Z',
      };
      // The database refuses this row (its principal is NOT NULL): the commit it is in fails.
      const refused = entry({ principal: null as unknown as string, action: 'shared' });
      await expect(h.store.share(share, refused)).rejects.toThrow();
      expect(await h.store.shareOf('s1', 'member:bob')).toBeNull();
      await h.store.share(share, entry({ principal: 'native:owner', action: 'shared' }));
      expect(await h.store.shareOf('s1', 'member:bob')).toBe('read');

      await expect(h.store.unshare('s1', 'member:bob', { ...refused, action: 'unshared' })).rejects.toThrow();
      expect(await h.store.shareOf('s1', 'member:bob')).toBe('read');
      expect(await h.store.unshare('s1', 'member:bob', entry({ action: 'unshared' }))).toBe(true);
      expect(await h.store.shareOf('s1', 'member:bob')).toBeNull();
      expect((await h.store.listAudit({ limit: 10 })).map((r) => r.action)).toEqual(['unshared', 'shared']);
    });

    it('audit rows list newest first, filtered by session and principal, a page at a time', async () => {
      await h.store.appendAudit(entry({ action: 'created', detail: { note: 'first' } }));
      await h.store.appendAudit(entry({ principal: 'member:bob', outcome: 'not_found' }));
      await h.store.appendAudit(
        entry({ session_id: null, principal: 'dashboard:owner', action: 'signed_in', path: 'password' }),
      );
      const all = await h.store.listAudit({ limit: 10 });
      expect(all.map((r) => [r.principal, r.action, r.session_id, r.outcome])).toEqual([
        ['dashboard:owner', 'signed_in', null, 'ok'],
        ['member:bob', 'submitted', 's1', 'not_found'],
        ['member:alice', 'created', 's1', 'ok'],
      ]);
      expect(all[2]!.detail).toEqual({ note: 'first' });
      expect(all[0]!.id).toBeGreaterThan(all[1]!.id);
      expect((await h.store.listAudit({ limit: 10, session_id: 's1' })).length).toBe(2);
      expect((await h.store.listAudit({ limit: 10, principal: 'member:bob' })).map((r) => r.outcome)).toEqual(
        ['not_found'],
      );
      const first = await h.store.listAudit({ limit: 2 });
      const next = await h.store.listAudit({ limit: 2, before_id: first.at(-1)!.id });
      expect(next.map((r) => r.action)).toEqual(['created']);
    });

    it('the audit log is append-only: the database refuses an update or a delete', async () => {
      await h.store.appendAudit(entry({}));
      await expect(h.raw("UPDATE audit_log SET outcome = 'forged'")).rejects.toThrow(/append-only/);
      await expect(h.raw('DELETE FROM audit_log')).rejects.toThrow(/append-only/);
      expect((await h.store.listAudit({ limit: 10 })).map((r) => r.outcome)).toEqual(['ok']);
    });
  });
}
