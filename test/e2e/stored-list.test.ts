/**
 * Issue 26 item 15: `session.list {scope: "stored"}` pages by access. A worker-adoption ticket bound
 * to three old sessions, with many newer sessions of the operator's in front of them, gets full
 * pages of its own sessions and a cursor between them; the operator walks everything a page at a
 * time. (It used to read the newest `limit × 4` rows and filter those: an empty page, no cursor.)
 */
import { describe, expect, it } from 'vitest';
import { requestTicket } from '../../src/surfaces/control/client.js';
import { GatewayClient, RpcCallError } from '../../src/surfaces/client/rpc-client.js';
import { tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();

type Page = { scope: string; sessions: { session_id: string }[]; next_cursor: string | null };

describe('session.list scope stored', () => {
  it('a principal whose sessions are older than many others still gets full pages and a cursor', async () => {
    const d = await fx.daemon();
    const owner = await d.connect();
    const cwd = tempDir();
    const create = async () =>
      (await owner.call<{ session_id: string }>('session.create', { cwd })).session_id;
    const old: string[] = [];
    for (let i = 0; i < 3; i++) old.push(await create());
    const newer: string[] = [];
    for (let i = 0; i < 40; i++) newer.push(await create());

    const { ticket } = await requestTicket(d.layout.controlSocket, 'worker-adoption', old);
    const worker = await GatewayClient.connect(d.url, ticket);
    try {
      const first = await worker.call<Page>('session.list', { scope: 'stored', limit: 2 });
      // (Sessions made in the same millisecond are ordered by id: compare as sets.)
      expect(first.sessions).toHaveLength(2);
      expect(first.next_cursor).toEqual(expect.any(String));
      const second = await worker.call<Page>('session.list', {
        scope: 'stored',
        limit: 2,
        cursor: first.next_cursor,
      });
      expect(second.sessions).toHaveLength(1);
      expect(second.next_cursor).toBeNull();
      const listed = [...first.sessions, ...second.sessions].map((s) => s.session_id);
      expect(listed.sort()).toEqual([...old].sort());
    } finally {
      await worker.close();
    }

    // The operator pages through every session, newest first, each once.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Page = await owner.call<Page>('session.list', {
        scope: 'stored',
        limit: 7,
        ...(cursor ? { cursor } : {}),
      });
      seen.push(...page.sessions.map((s) => s.session_id));
      cursor = page.next_cursor;
    } while (cursor !== null);
    expect(seen).toHaveLength(old.length + newer.length);
    expect([...seen].sort()).toEqual([...old, ...newer].sort());

    const refused = await owner
      .call('session.list', { scope: 'stored', cursor: 'not-a-cursor' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RpcCallError);
    expect((refused as RpcCallError).reason).toBe('invalid_params');
    const live = await owner.call('session.list', { scope: 'live', cursor: 'x' }).catch((e: unknown) => e);
    expect((live as RpcCallError).reason).toBe('invalid_params');
  }, 120_000);
});
