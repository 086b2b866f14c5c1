import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ADMISSION_STATES,
  newAdmissionId,
  nextStep,
  submissionDigest,
  type QueuedItem,
} from '../../../src/domain/local/admission.js';

const q = (...states: QueuedItem['state'][]): QueuedItem[] =>
  states.map((state, i) => ({ admission_id: `a${i}`, state }));

describe('LOC-8 / REC-2 next step of a session queue', () => {
  it('is idle when nothing is unsettled', () => {
    expect(nextStep([])).toEqual({ kind: 'idle' });
    expect(nextStep(q('completed', 'failed', 'cancelled', 'interrupted'))).toEqual({ kind: 'idle' });
  });
  it('claims the oldest queued admission', () => {
    expect(nextStep(q('completed', 'queued', 'queued'))).toEqual({ kind: 'claim', admission_id: 'a1' });
  });
  it('runs one turn at a time', () => {
    expect(nextStep(q('running', 'queued'))).toEqual({ kind: 'busy', admission_id: 'a0' });
  });
  it('is blocked behind an unknown admission', () => {
    expect(nextStep(q('completed', 'unknown', 'queued'))).toEqual({ kind: 'blocked', admission_id: 'a1' });
  });
  it('never claims anything behind an unknown or running admission (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...ADMISSION_STATES), { maxLength: 12 }), (states) => {
        const step = nextStep(q(...states));
        if (step.kind === 'claim') {
          const index = Number(step.admission_id.slice(1));
          expect(states[index]).toBe('queued');
          expect(
            states.slice(0, index).some((s) => s === 'running' || s === 'unknown' || s === 'queued'),
          ).toBe(false);
        }
      }),
    );
  });
});

describe('LOC-8 submission digest', () => {
  it('is the same for the same text and differs otherwise', () => {
    expect(submissionDigest('hello')).toBe(submissionDigest('hello'));
    expect(submissionDigest('hello')).not.toBe(submissionDigest('hello '));
  });
});

describe('admission ids', () => {
  it('are RFC 9562 version-7 UUIDs whose text order follows their time', () => {
    const uuid7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 48 - 10_001 }),
        fc.integer({ min: 1, max: 10_000 }),
        (t, dt) => {
          const earlier = newAdmissionId(t);
          const later = newAdmissionId(t + dt);
          expect(earlier).toMatch(uuid7);
          expect(later).toMatch(uuid7);
          expect(earlier < later).toBe(true);
        },
      ),
    );
    const t = Date.UTC(2026, 10, 29, 12);
    expect(newAdmissionId(t).replaceAll('-', '').slice(0, 12)).toBe(t.toString(16).padStart(12, '0'));
    expect(new Set(Array.from({ length: 1000 }, () => newAdmissionId(t))).size).toBe(1000);
  });
});
