import { describe, expect, it } from 'vitest';
import {
  decideAccess,
  isSessionId,
  mayMarkResumePending,
  newSessionId,
} from '../../../src/domain/session/lifecycle.js';

const flags = (suspended: boolean, resume_pending: boolean) => ({ suspended, resume_pending });

describe('ENT-2 decision order (pure)', () => {
  it('no entry → create; force_new → create whatever the flags', () => {
    expect(decideAccess(null)).toEqual({ kind: 'create' });
    expect(decideAccess(flags(true, true), { forceNew: true })).toEqual({ kind: 'create' });
  });

  it('suspended → replace with reason "suspended", even when resume_pending is set', () => {
    expect(decideAccess(flags(true, false))).toEqual({ kind: 'replace', reason: 'suspended' });
    expect(decideAccess(flags(true, true))).toEqual({ kind: 'replace', reason: 'suspended' });
  });

  it('resume_pending → keep; otherwise touch (there is no idle or daily branch)', () => {
    expect(decideAccess(flags(false, true))).toEqual({ kind: 'resume_pending' });
    expect(decideAccess(flags(false, false))).toEqual({ kind: 'touch' });
  });

  it('a resume mark never goes on a suspended entry', () => {
    expect(mayMarkResumePending({ suspended: true })).toBe(false);
    expect(mayMarkResumePending({ suspended: false })).toBe(true);
  });
});

describe('ENT-1 session ids', () => {
  it('are YYYYMMDD_HHMMSS_<8hex> in UTC', () => {
    const id = newSessionId(new Date('2026-12-31T23:59:58.999+09:00'), '0a1b2c3d');
    expect(id).toBe('20261231_145958_0a1b2c3d');
    expect(isSessionId(id)).toBe(true);
    expect(isSessionId('20261231_145958_0A1B2C3D')).toBe(false);
  });

  it('refuse a suffix that is not 8 lowercase hex digits', () => {
    expect(() => newSessionId(new Date(), 'xyz')).toThrow(RangeError);
  });
});
