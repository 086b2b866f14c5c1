/**
 * Where a session control runs in a cluster (issue 14, relayed-controls.ts): here when this
 * instance holds the session's lease or nobody does, on the owner otherwise, routed again when the
 * lease moved before the control ran anything; the owner's side runs the very same local call.
 * The relay is a recording stand-in: its database side is test/integration/storage/pg-control-relay.
 */
import { describe, expect, it } from 'vitest';
import { makePrincipal, OPERATOR_CAPABILITIES } from '../../../src/domain/auth/principal.js';
import type { ControlRelay, ControlRoute, RelayedKind } from '../../../src/domain/cluster/relay.js';
import { GatewayError } from '../../../src/domain/errors.js';
import type { SessionInputs } from '../../../src/domain/local/inputs.js';
import { RelayedControls, type SessionControlCalls } from '../../../src/domain/local/relayed-controls.js';
import { elsewhereBusy } from '../../../src/domain/local/scheduler.js';
import type { PromptBroker } from '../../../src/runtime/approvals/broker.js';

const principal = makePrincipal('native:alice', 'native', 'default', OPERATOR_CAPABILITIES);
const owner = { instance_id: 'a', epoch: 1 };

interface Rig {
  controls: RelayedControls;
  /** What ran here (local calls) and what was forwarded, in order. */
  log: string[];
}

function rig(options: {
  relay?: boolean;
  holdsLease?: boolean;
  /** The routes the relay answers, one per call (the last repeats). */
  routes?: ControlRoute[];
  /** What the owner answers a forwarded call: a result, or a refusal to throw. */
  forwarded?: (kind: RelayedKind) => unknown;
  /** What a local call does (default: answers where it ran). */
  local?: (name: string) => Promise<Record<string, unknown>>;
  denied?: boolean;
}): Rig {
  const log: string[] = [];
  const routes = [...(options.routes ?? [{ kind: 'local' }])];
  const relay = {
    route: (_logicalId: string, runsHere: boolean): Promise<ControlRoute> => {
      log.push(`route(${runsHere})`);
      if (runsHere) return Promise.resolve({ kind: 'local' });
      return Promise.resolve(routes.length > 1 ? routes.shift()! : routes[0]!);
    },
    forward: (
      to: typeof owner,
      kind: RelayedKind,
      _logicalId: string,
      p: unknown,
      params: Record<string, unknown>,
    ) => {
      log.push(
        `forward ${kind} to ${to.instance_id} as ${(p as typeof principal).subject} ${JSON.stringify(params)}`,
      );
      const answer = options.forwarded?.(kind) ?? { ran: 'owner' };
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
  } as unknown as ControlRelay;
  const local =
    (name: string) =>
    (_p: unknown, params: { session_id: string }): Promise<Record<string, unknown>> => {
      log.push(`local ${name} ${params.session_id}`);
      return options.local ? options.local(name) : Promise.resolve({ ran: 'here' });
    };
  const session: SessionControlCalls = {
    reset: local('reset'),
    undo: local('undo'),
    retry: local('retry'),
    compress: local('compress'),
    restore: local('restore'),
    model: local('model'),
  };
  const controls = new RelayedControls({
    relay: options.relay === false ? null : relay,
    inputs: {} as SessionInputs,
    prompts: {} as PromptBroker,
    session,
    access: () => {
      log.push('access');
      return options.denied
        ? Promise.reject(new GatewayError('permission_denied', 'not yours'))
        : Promise.resolve({});
    },
    runsHere: () => false,
    holdsLease: () => options.holdsLease ?? false,
    onError: () => undefined,
  });
  return { controls, log };
}

const reset = { session_id: 's1', request_id: 'r1' };

describe('session controls in a cluster (relayed-controls.ts)', () => {
  it('without a relay (one instance) each is the local call, nothing routed', async () => {
    const { controls, log } = rig({ relay: false });
    await expect(controls.reset(principal, reset)).resolves.toEqual({ ran: 'here' });
    expect(log).toEqual(['local reset s1']);
  });

  it('runs here when this instance holds the lease, or when nobody does', async () => {
    const held = rig({ holdsLease: true });
    await expect(held.controls.compress(principal, { session_id: 's1' })).resolves.toEqual({ ran: 'here' });
    expect(held.log).toEqual(['access', 'route(true)', 'local compress s1']);
    const free = rig({ routes: [{ kind: 'local' }] });
    await expect(free.controls.undo(principal, { ...reset, turns: 2 })).resolves.toEqual({ ran: 'here' });
    expect(free.log).toEqual(['access', 'route(false)', 'local undo s1']);
  });

  it('forwards each to the live owner with the caller principal and its params, after checking access here', async () => {
    const { controls, log } = rig({ routes: [{ kind: 'forward', owner }] });
    await expect(controls.retry(principal, reset)).resolves.toEqual({ ran: 'owner' });
    await controls.restore(principal, { session_id: 's1', checkpoint: 3 });
    expect(log).toEqual([
      'access',
      'route(false)',
      `forward session.retry to a as native:alice {"session_id":"s1","request_id":"r1"}`,
      'access',
      'route(false)',
      `forward checkpoint.restore to a as native:alice {"session_id":"s1","checkpoint":3}`,
    ]);
  });

  it('refuses a caller without access before routing anything', async () => {
    const { controls, log } = rig({ routes: [{ kind: 'forward', owner }], denied: true });
    await expect(controls.reset(principal, reset)).rejects.toMatchObject({ reason: 'permission_denied' });
    expect(log).toEqual(['access']);
  });

  it('routes again when the lease moved before the control ran: taken elsewhere after a free route, or given back by the owner', async () => {
    // Nobody held it, but another instance took it before this one could: forwarded to it.
    let first = true;
    const taken = rig({
      routes: [{ kind: 'local' }, { kind: 'forward', owner }],
      local: () => {
        if (!first) return Promise.resolve({ ran: 'here' });
        first = false;
        return Promise.reject(elsewhereBusy('s1'));
      },
    });
    await expect(taken.controls.reset(principal, reset)).resolves.toEqual({ ran: 'owner' });
    expect(taken.log.filter((l) => !l.startsWith('forward'))).toEqual([
      'access',
      'route(false)',
      'local reset s1',
      'route(false)',
    ]);
    // The owner answers held_elsewhere (it had given the lease back, another took it): routed again.
    const moved = rig({
      routes: [{ kind: 'forward', owner }, { kind: 'local' }],
      forwarded: () => elsewhereBusy('s1'),
    });
    await expect(moved.controls.reset(principal, reset)).resolves.toEqual({ ran: 'here' });
    expect(moved.log.at(-1)).toBe('local reset s1');
  });

  it('a refusal that is not held_elsewhere stands at once; held_elsewhere stands after three routes', async () => {
    const busy = new GatewayError('session_busy', 'a turn is running', { session_id: 's1' });
    const running = rig({ routes: [{ kind: 'forward', owner }], forwarded: () => busy });
    await expect(running.controls.reset(principal, reset)).rejects.toBe(busy);
    expect(running.log.filter((l) => l.startsWith('forward'))).toHaveLength(1);
    const bouncing = rig({ routes: [{ kind: 'forward', owner }], forwarded: () => elsewhereBusy('s1') });
    await expect(bouncing.controls.undo(principal, { ...reset, turns: 1 })).rejects.toMatchObject({
      reason: 'session_busy',
      details: { held_elsewhere: true },
    });
    expect(bouncing.log.filter((l) => l.startsWith('forward'))).toHaveLength(3);
  });

  it("the owner's side runs the very same local call with the carried principal, never routed again", async () => {
    const { controls, log } = rig({ routes: [{ kind: 'forward', owner }] });
    await expect(controls.run('session.undo', principal, { ...reset, turns: 1 })).resolves.toEqual({
      ran: 'here',
    });
    await expect(
      controls.run('checkpoint.restore', principal, { session_id: 's1', checkpoint: 1 }),
    ).resolves.toEqual({
      ran: 'here',
    });
    await expect(controls.run('session.reset', null, reset)).rejects.toMatchObject({
      reason: 'permission_denied',
    });
    expect(log).toEqual(['local undo s1', 'local restore s1']);
  });

  it('a reset carries its audit row to the owner, which commits it with the reset; answered, it is recorded', async () => {
    const entry = {
      at: '2026-12-06T12:00:00.000Z',
      principal: 'native:alice',
      path: 'native',
      action: 'reset' as const,
      session_id: 's1',
      outcome: 'ok',
      detail: null,
    };
    const draft = { entry, recorded: false };
    const { controls, log } = rig({ routes: [{ kind: 'forward', owner }] });
    await controls.reset(principal, reset, draft);
    expect(log.filter((l) => l.startsWith('forward'))).toEqual([
      `forward session.reset to a as native:alice ${JSON.stringify({ ...reset, audit: entry })}`,
    ]);
    expect(draft.recorded).toBe(true);

    // The owner's side: the reset's own params, and the row as a draft for its commit.
    const seen: unknown[] = [];
    const owned = new RelayedControls({
      relay: null,
      inputs: {} as SessionInputs,
      prompts: {} as PromptBroker,
      session: {
        reset: ((_p, params, audit) => (
          seen.push(params, audit),
          Promise.resolve({ ran: 'here' })
        )) as SessionControlCalls['reset'],
      } as unknown as SessionControlCalls,
      access: () => Promise.resolve({}),
      runsHere: () => true,
      holdsLease: () => true,
      onError: () => undefined,
    });
    await owned.run('session.reset', principal, { ...reset, audit: entry });
    expect(seen).toEqual([reset, { entry, recorded: false }]);

    // Refused by the owner, the row is not recorded: the caller's instance writes the refusal's.
    const refusedDraft = { entry, recorded: false };
    const busy = new GatewayError('session_busy', 'a turn is running', { session_id: 's1' });
    const running = rig({ routes: [{ kind: 'forward', owner }], forwarded: () => busy });
    await expect(running.controls.reset(principal, reset, refusedDraft)).rejects.toBe(busy);
    expect(refusedDraft.recorded).toBe(false);
  });
});
