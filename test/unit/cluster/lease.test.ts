/** The pure lease decisions (SCL-1): who may take a lease, on the database's clock, and when an owner stops. */
import { describe, expect, it } from 'vitest';
import { decideTake, leaseTiming, renewalHealth } from '../../../src/domain/cluster/lease.js';

const me = { instance_id: 'a', epoch: 5 };
const lease = (owner: { instance_id: string; epoch: number } | null, expiresIn: number, token = 3) => ({
  owner_instance: owner?.instance_id ?? null,
  owner_epoch: owner?.epoch ?? null,
  token,
  expires_at: 1_000_000 + expiresIn,
  db_now: 1_000_000,
});

describe('decideTake', () => {
  it('creates a lease nobody ever held', () => {
    expect(decideTake(null, me)).toEqual({ kind: 'create' });
  });

  it('renews its own lease under the same token', () => {
    expect(decideTake(lease(me, 5000), me)).toEqual({ kind: 'mine', token: 3 });
  });

  it('takes a released lease under the next token', () => {
    expect(decideTake(lease(null, -1), me)).toEqual({
      kind: 'take',
      from_token: 3,
      token: 4,
      previous: null,
    });
  });

  it('takes a lease whose owner stopped renewing (expired by the server clock) under the next token', () => {
    const other = { instance_id: 'b', epoch: 7 };
    expect(decideTake(lease(other, 0), me)).toEqual({
      kind: 'take',
      from_token: 3,
      token: 4,
      previous: other,
    });
  });

  it('leaves a live lease of another instance alone, even of the same instance id in an older epoch', () => {
    const older = { instance_id: 'a', epoch: 4 };
    expect(decideTake(lease(older, 1), me)).toEqual({ kind: 'held', owner: older, token: 3 });
  });
});

describe('lease timing', () => {
  it('renews six times per lease and stops at half a lease without renewal', () => {
    const timing = leaseTiming(9);
    expect(timing).toEqual({ lease_s: 9, heartbeatMs: 1500, stopAfterMs: 4500, scanMs: 2250 });
    expect(renewalHealth(0, 4500, timing)).toBe('ok');
    expect(renewalHealth(0, 4501, timing)).toBe('stop');
  });

  it('refuses a lease that is not positive', () => {
    expect(() => leaseTiming(0)).toThrow(/positive/);
  });
});
