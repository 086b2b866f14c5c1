import { describe, expect, it } from 'vitest';
import { DEFAULT_LOGIN_LIMITS, LoginLimiter } from '../../../src/domain/auth/login-limiter.js';

function limiter(limits = {}) {
  const clock = { now: 0 };
  return { clock, limiter: new LoginLimiter(() => clock.now, { ...DEFAULT_LOGIN_LIMITS, ...limits }) };
}

describe('login limiter (issue 12 item 1)', () => {
  it('counts an attempt when admitted: a burst from one client gets only the free attempts', () => {
    const { limiter: l } = limiter();
    const admissions = Array.from({ length: 60 }, () => l.admit('10.0.0.9'));
    expect(admissions.filter((a) => a.admitted)).toHaveLength(5);
    expect(
      admissions.slice(5).every((a) => !a.admitted && a.scope === 'client' && a.retryAfterMs >= 1000),
    ).toBe(true);
  });

  it('backs a failing client off exponentially, capped, and a success clears it', () => {
    const { clock, limiter: l } = limiter();
    for (let i = 0; i < 5; i++) {
      expect(l.admit('a').admitted).toBe(true);
      l.settle('a', 'refused');
    }
    const waits: number[] = [];
    for (let i = 0; i < 9; i++) {
      const refused = l.admit('a');
      if (refused.admitted) throw new Error('expected a wait');
      waits.push(refused.retryAfterMs);
      clock.now += refused.retryAfterMs;
      expect(l.admit('a').admitted).toBe(true);
      l.settle('a', 'refused');
    }
    expect(waits).toEqual([1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000]);
    clock.now += 60_000;
    expect(l.admit('a').admitted).toBe(true);
    l.settle('a', 'accepted');
    expect(l.admit('a').admitted).toBe(true);
  });

  it("one client's failures never delay another, and a client is forgotten after a quiet while", () => {
    const { clock, limiter: l } = limiter();
    for (let i = 0; i < 8; i++) {
      if (l.admit('attacker').admitted) l.settle('attacker', 'refused');
      clock.now += 100;
    }
    expect(l.admit('owner').admitted).toBe(true);
    l.settle('owner', 'accepted');
    clock.now += DEFAULT_LOGIN_LIMITS.forgetAfterMs;
    expect(l.admit('attacker').admitted).toBe(true);
  });

  it('bounds everyone together with a bucket that refills within seconds', () => {
    const { clock, limiter: l } = limiter();
    const many = Array.from({ length: 30 }, (_, i) => l.admit(`10.0.1.${i}`));
    expect(many.filter((a) => a.admitted)).toHaveLength(10);
    expect(many[10]).toMatchObject({ admitted: false, scope: 'global', retryAfterMs: 1000 });
    clock.now += 1000;
    expect(l.admit('owner').admitted).toBe(true);
  });

  it('bounds concurrent verifications; abandoned attempts cost no failure', () => {
    const { limiter: l } = limiter();
    expect([l.beginVerification(), l.beginVerification(), l.beginVerification()]).toEqual([
      true,
      true,
      false,
    ]);
    l.endVerification();
    expect(l.beginVerification()).toBe(true);
    for (let i = 0; i < 20; i++) {
      expect(l.admit('b').admitted).toBe(i < 10);
      if (i < 10) l.settle('b', 'abandoned');
    }
  });
});
