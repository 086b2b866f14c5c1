/**
 * Members and sharing (issue 30) through the real daemon on both stores: the attack table re-run as
 * a member against another member's session (every session method answers `not_found`, operator
 * scope cannot be taken through params), members' launch limits, sharing and revocation on live
 * connections, approvals answerable only by those allowed, and an audit row for each action.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { requestTicket } from '../../src/surfaces/control/client.js';
import { GatewayClient, type Notification } from '../../src/surfaces/client/rpc-client.js';
import { BACKENDS, nextEvent, type RunningDaemon } from './gateway-harness.js';
import { createAttached, runTurn, tempDir, useFixture, type Snapshot } from './seed-fixture.js';

const fx = useFixture();

async function member(d: RunningDaemon, name: string): Promise<GatewayClient> {
  const { ticket } = await requestTicket(d.layout.controlSocket, 'interactive', undefined, name);
  return GatewayClient.connect(d.url, ticket);
}

async function refusal(call: Promise<unknown>): Promise<string> {
  return call.then(
    () => 'accepted',
    (error: { reason?: string; message?: string }) => error.reason ?? `thrown: ${error.message}`,
  );
}

/** Every method that names a session, with params that would pass its schema. */
function sessionCalls(session_id: string): [string, Record<string, unknown>][] {
  return [
    ['session.resume', { session_id }],
    ['session.detach', { session_id }],
    ['session.info', { session_id }],
    ['session.cost', { session_id }],
    ['session.messages', { session_id }],
    ['session.history', { session_id }],
    ['session.title', { session_id, title: 'mine now' }],
    ['session.events.since', { session_id, epoch: 0, after_seq: 0 }],
    ['prompt.submit', { session_id, submission_id: 'x', text: 'hello' }],
    ['prompt.cancel', { session_id, admission_id: 'adm' }],
    ['prompt.resolve_unknown', { session_id, admission_id: 'adm', execution_generation: 0 }],
    ['session.interrupt', { session_id, execution_generation: 0 }],
    ['session.compress', { session_id }],
    ['session.reset', { session_id, request_id: 'r' }],
    ['session.undo', { session_id, request_id: 'u' }],
    ['session.retry', { session_id, request_id: 't' }],
    ['session.model', { session_id, model: 'gatehouse-demo' }],
    ['checkpoint.list', { session_id }],
    ['checkpoint.restore', { session_id, checkpoint: 1 }],
    ['approval.respond', { session_id, execution_generation: 0, prompt_id: 'p', choice: 'once' }],
    ['clarify.respond', { session_id, execution_generation: 0, prompt_id: 'p', answer: 'yes' }],
  ];
}

type AuditRow = {
  principal: string;
  action: string;
  session_id: string | null;
  outcome: string;
  path: string;
};

async function audit(operator: GatewayClient, session_id?: string): Promise<AuditRow[]> {
  const { rows } = await operator.call<{ rows: AuditRow[] }>('audit.list', {
    limit: 500,
    ...(session_id ? { session_id } : {}),
  });
  return rows.reverse();
}

describe.each(BACKENDS)('members and sharing on %s', (store) => {
  beforeAll(() => {
    fx.store = store;
  });

  it("a member reaches nothing of another member's session: every method is not_found, lists and search are empty, params grant no scope", async () => {
    const d = await fx.daemon();
    const operator = await d.connect();
    const alice = await member(d, 'alice');
    const bob = await member(d, 'bob');
    const described = await bob.call<{ principal: { subject: string }; capabilities: string[] }>(
      'runtime.describe',
    );
    expect(described.principal.subject).toBe('member:bob');
    expect(described.capabilities).toContain('session:create');
    expect(described.capabilities).not.toContain('session:operator');

    const session_id = await createAttached(alice, { cwd: tempDir(), title: 'alice private' });
    await runTurn(alice, session_id, 's1', 'the secret word is heliotrope');
    const absent = 'no-such-session-0000';
    const wrong: string[] = [];
    for (const [method, params] of sessionCalls(session_id)) {
      const toForeign = await refusal(bob.call(method, params));
      const toAbsent = await refusal(bob.call(method, { ...params, session_id: absent }));
      if (toForeign !== 'not_found') wrong.push(`${method} on alice's: ${toForeign}`);
      // The same answer an absent session gets: bob cannot tell the two apart.
      if (toForeign !== toAbsent) wrong.push(`${method}: ${toForeign} vs absent ${toAbsent}`);
    }
    expect(wrong).toEqual([]);
    for (const scope of ['live', 'stored', 'all'])
      expect(await bob.call('session.list', { scope }), scope).toMatchObject({ sessions: [] });
    expect(await bob.call('session.search', { query: 'heliotrope' })).toMatchObject({ hits: [] });
    // Alice sees hers; the operator sees it too (AUTH-4).
    const hers = await alice.call<{ hits: { session_id: string }[] }>('session.search', {
      query: 'heliotrope',
    });
    expect(hers.hits.map((h) => h.session_id)).toContain(session_id);
    const all = await operator.call<{ sessions: { session_id: string }[] }>('session.list', {
      scope: 'stored',
    });
    expect(all.sessions.map((s) => s.session_id)).toEqual([session_id]);

    // Operator scope is never taken from params, and operator methods stay closed.
    for (const [method, params] of [
      ['session.resume', { session_id, operator: true }],
      ['session.resume', { session_id, capabilities: ['session:operator'] }],
      ['session.info', { session_id, subject: 'member:alice' }],
      [
        'prompt.submit',
        { session_id, submission_id: 'y', text: 'hi', principal: { subject: 'member:alice' } },
      ],
      ['session.list', { scope: 'operator' }],
    ] as const)
      expect(await refusal(bob.call(method, params)), method).toBe('invalid_params');
    for (const [method, params] of [
      ['session.share', { session_id, member: 'member:bob', level: 'full' }],
      ['session.unshare', { session_id, member: 'member:bob' }],
      ['session.shares', { session_id }],
      ['audit.list', {}],
      ['approvals.list', {}],
    ] as const)
      expect(await refusal(bob.call(method, params)), method).toBe('permission_denied');

    // Nothing bob tried changed alice's session.
    const snapshot = await alice.call<Snapshot>('session.resume', { session_id });
    expect(snapshot.info['title']).toBe('alice private');
    expect(snapshot.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'the secret word is heliotrope',
    ]);
    await Promise.all([operator, alice, bob].map((c) => c.close()));
  });

  it("members' launch limits are enforced at creation and at session.model; operators are not limited", async () => {
    const d = await fx.daemon({
      extraConfig: ['auth:', '  members:', '    yolo: false', '    models: [gatehouse-demo]'].join('\n'),
    });
    const operator = await d.connect();
    const alice = await member(d, 'alice');
    const cwd = tempDir();
    const refused = async (params: Record<string, unknown>) =>
      alice.call('session.create', { cwd, ...params }).then(
        () => null,
        (e: { reason: string; details: { field: string } }) => [e.reason, e.details.field],
      );
    expect(await refused({ yolo: true })).toEqual(['member_limit', 'yolo']);
    expect(await refused({ base_url: 'http://127.0.0.1:9/v1' })).toEqual(['member_limit', 'base_url']);
    expect(await refused({ model: 'some-other-model' })).toEqual(['member_limit', 'model']);
    expect(await alice.call('session.list', { scope: 'stored' })).toMatchObject({ sessions: [] });

    const { session_id } = await alice.call<Snapshot>('session.create', { cwd });
    expect(await refusal(alice.call('session.model', { session_id, model: 'another-model' }))).toBe(
      'member_limit',
    );
    const yolo = await operator.call<Snapshot>('session.create', { cwd, yolo: true, model: 'another-model' });
    expect(yolo.info['model']).toBe('another-model');
    await Promise.all([operator, alice].map((c) => c.close()));
  });

  it('sharing and revocation take effect on live connections; approvals only by those allowed; every action audited', async () => {
    const d = await fx.daemon();
    const operator = await d.connect();
    const alice = await member(d, 'alice');
    const bob = await member(d, 'bob');
    const session_id = await createAttached(alice, { cwd: tempDir() });

    // Read: bob follows the session live, and may not write to it.
    await operator.call('session.share', { session_id, member: 'member:bob', level: 'read' });
    expect(await operator.call('session.shares', { session_id })).toMatchObject({
      shares: [{ member: 'member:bob', level: 'read', granted_by: 'native:owner' }],
    });
    await bob.call('session.resume', { session_id });
    const listed = await bob.call<{ sessions: { session_id: string }[] }>('session.list', {
      scope: 'stored',
    });
    expect(listed.sessions.map((s) => s.session_id)).toEqual([session_id]);
    const seen = nextEvent(bob, 'turn.complete', (e) => e.session_id === session_id);
    await runTurn(alice, session_id, 'a1', 'first from alice');
    await seen;
    expect(await refusal(bob.call('prompt.submit', { session_id, submission_id: 'b0', text: 'no' }))).toBe(
      'share_level',
    );

    // Submit: the same live connection may now submit; the admission is bob's, the receipt alice's.
    await operator.call('session.share', { session_id, member: 'member:bob', level: 'submit' });
    await runTurn(bob, session_id, 'b1', 'then from bob');
    // An approval is asked: bob (submit) may not answer it, a stranger cannot see it, alice can.
    const carol = await member(d, 'carol');
    const asked = nextEvent(alice, 'approval.request', (e) => e.session_id === session_id);
    await alice.call('prompt.submit', {
      session_id,
      submission_id: 'a2',
      text: 'run: rm -rf ./nothing-here',
    });
    const request = (await asked).event;
    const answer = (client: GatewayClient, choice: string) =>
      client.call('approval.respond', {
        session_id,
        prompt_id: request['prompt_id'],
        execution_generation: request['execution_generation'],
        choice,
      });
    expect(await refusal(answer(bob, 'once'))).toBe('share_level');
    expect(await refusal(answer(carol, 'once'))).toBe('not_found');
    const done = nextEvent(alice, 'turn.complete', (e) => e.session_id === session_id);
    await expect(answer(alice, 'deny')).resolves.toMatchObject({ status: 'resolved' });
    await done;

    // Full: bob may interrupt and reset; then revocation detaches his live viewer at once.
    await operator.call('session.share', { session_id, member: 'member:bob', level: 'full' });
    await bob.call('session.reset', { session_id, request_id: 'reset-1' });
    const revoked = bob.next((n: Notification) => n.method === 'session.access_revoked', 10_000);
    expect(await operator.call('session.unshare', { session_id, member: 'member:bob' })).toMatchObject({
      revoked: true,
      viewers_detached: 1,
    });
    expect((await revoked).params).toEqual({ session_id });
    expect(await refusal(bob.call('session.info', { session_id }))).toBe('not_found');
    expect(await bob.call('session.list', { scope: 'stored' })).toMatchObject({ sessions: [] });
    // Nothing more reaches bob: alice's next turn completes for her, and bob saw no event of it.
    const events: string[] = [];
    bob.onNotification((n) => events.push(n.method));
    await runTurn(alice, session_id, 'a3', 'after the revocation');
    await bob.call('ping');
    expect(events).toEqual([]);

    const info = await alice.call<Record<string, unknown>>('session.info', { session_id });
    expect(JSON.stringify(info)).not.toContain('member:bob');
    const rows = (await audit(operator, session_id)).map((r) => [r.principal, r.action, r.outcome]);
    expect(rows).toEqual([
      ['member:alice', 'created', 'ok'],
      ['native:owner', 'shared', 'ok'],
      ['member:alice', 'submitted', 'ok'],
      ['member:bob', 'submitted', 'share_level'],
      ['native:owner', 'shared', 'ok'],
      ['member:bob', 'submitted', 'ok'],
      ['member:alice', 'submitted', 'ok'],
      ['member:bob', 'approved', 'share_level'],
      ['member:carol', 'approved', 'not_found'],
      ['member:alice', 'denied', 'ok'],
      ['native:owner', 'shared', 'ok'],
      ['member:bob', 'reset', 'ok'],
      ['native:owner', 'unshared', 'ok'],
      ['member:alice', 'submitted', 'ok'],
    ]);
    // No message text unless configured.
    expect(JSON.stringify(await audit(operator))).not.toContain('first from alice');
    await Promise.all([operator, alice, bob, carol].map((c) => c.close()));
  });
});
