/**
 * The session hub in cluster mode (docs/cluster.md): what it publishes goes to the outbox, not to
 * its viewers; what it shows comes numbered by the shared stream through `receive`, applied only in
 * order; `restart` numbers on past a hole. Local mode is unchanged: the hub numbers and fans out.
 */
import { describe, expect, it, vi } from 'vitest';
import { makePrincipal } from '../../../src/domain/auth/principal.js';
import {
  ACCESS_REVOKED_NOTIFICATION,
  SessionHub,
  SHARE_REVOKED_EVENT,
  type EventNotification,
  type PublicEvent,
  type SharedEvent,
} from '../../../src/domain/local/hub.js';

function viewer(id: string): {
  id: string;
  principal: ReturnType<typeof makePrincipal>;
  got: number[];
  notify(m: string, p: unknown): boolean;
  deliver(note: SharedEvent): boolean;
} {
  const got: number[] = [];
  return {
    id,
    principal: makePrincipal('native:owner', 'native', 'default', []),
    got,
    notify: (_m, p) => (got.push((p as EventNotification).seq), true),
    deliver: (note) => (got.push(note.params.seq), true),
  };
}

const ev = (n: number): PublicEvent => ({ type: 'n', n });

describe('SessionHub in cluster mode', () => {
  it('publishes to the outbox and shows only received events, in order', () => {
    const sent: PublicEvent[] = [];
    const hub = new SessionHub('s', 5, {
      replayCapacity: 10,
      coalesceMs: 0,
      outbox: (_id, e) => sent.push(e),
    });
    const v = viewer('v');
    hub.attach(v);
    hub.publish(ev(1));
    expect(sent).toEqual([ev(1)]);
    expect(v.got).toEqual([]);
    hub.restart(9, 3);
    expect(hub.epoch).toBe(9);
    expect(hub.receive(9, 5, ev(1))).toBe('gap');
    expect(hub.receive(9, 4, ev(1))).toBe('applied');
    expect(hub.receive(9, 4, ev(1))).toBe('duplicate');
    expect(hub.receive(8, 5, ev(2))).toBe('gap');
    expect(hub.receive(9, 5, ev(2))).toBe('applied');
    expect(v.got).toEqual([4, 5]);
    expect(hub.since(9, 4)).toMatchObject({ kind: 'events', last_seq: 5 });
    expect(hub.since(9, 2)).toMatchObject({ kind: 'snapshot_required', reason: 'gap' });
    // Past a hole the numbering goes on; the viewer sees the jump.
    hub.restart(9, 7);
    expect(hub.receive(9, 8, ev(3))).toBe('applied');
    expect(v.got).toEqual([4, 5, 8]);
  });

  it('without an outbox the hub numbers and fans out itself (local mode)', () => {
    const hub = new SessionHub('s', 5, { replayCapacity: 10, coalesceMs: 0 });
    const v = viewer('v');
    hub.attach(v);
    hub.publish(ev(1));
    hub.publish(ev(2));
    expect(v.got).toEqual([1, 2]);
    expect(hub.receivedSeq).toBe(2);
  });

  it('serializes an event once however many viewers receive it (issue 32 aim 5)', () => {
    const hub = new SessionHub('s', 5, { replayCapacity: 10, coalesceMs: 0 });
    const frames: Buffer[] = [];
    for (let i = 0; i < 100; i += 1) {
      hub.attach({
        id: `v${i}`,
        principal: makePrincipal('native:owner', 'native', 'default', []),
        notify: () => true,
        deliver: (note) => (
          frames.push(
            note.encoded((method, params) => Buffer.from(JSON.stringify({ jsonrpc: '2.0', method, params }))),
          ),
          true
        ),
      });
    }
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      hub.publish(ev(1));
      expect(stringify).toHaveBeenCalledTimes(1);
    } finally {
      stringify.mockRestore();
    }
    expect(frames).toHaveLength(100);
    expect(new Set(frames).size).toBe(1);
    expect(JSON.parse(frames[0]!.toString('utf8'))).toEqual({
      jsonrpc: '2.0',
      method: 'session.event',
      params: { session_id: 's', epoch: 5, seq: 1, event: ev(1) },
    });
  });
});

describe('SessionHub: a share revoked (issue 30)', () => {
  const person = (id: string, subject: string, operator: boolean) => {
    const seen: string[] = [];
    return {
      id,
      principal: makePrincipal(
        subject,
        'native',
        'default',
        operator ? ['session:operator'] : ['session:create'],
      ),
      seen,
      notify: (method: string) => (seen.push(method), true),
      deliver: (note: SharedEvent) => (seen.push(note.params.event.type), true),
    };
  };

  it("applied from the stream, detaches the member's viewers before it and tells them; others go on", () => {
    const hub = new SessionHub('s', 5, { replayCapacity: 10, coalesceMs: 0, outbox: () => undefined });
    const alice = person('a', 'member:alice', false);
    const bob = person('b', 'member:bob', false);
    // An operator who happens to carry the same subject keeps its access.
    const operator = person('o', 'member:alice', true);
    for (const v of [alice, bob, operator]) hub.attach(v);
    hub.receive(5, 1, { type: 'turn.start' });
    hub.receive(5, 2, { type: SHARE_REVOKED_EVENT, member: 'member:alice' });
    hub.receive(5, 3, { type: 'turn.complete' });
    expect(alice.seen).toEqual(['turn.start', ACCESS_REVOKED_NOTIFICATION]);
    expect(bob.seen).toEqual(['turn.start', SHARE_REVOKED_EVENT, 'turn.complete']);
    expect(operator.seen).toEqual(['turn.start', SHARE_REVOKED_EVENT, 'turn.complete']);
    expect(hub.has('a')).toBe(false);
    expect(hub.viewerCount).toBe(2);
  });
});
