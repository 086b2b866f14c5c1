/**
 * pauseHolds (src/domain/budget/decide.ts): when prompt.submit to a session its budget paused is
 * refused (`budget_paused`), and when the prompt is admitted for its first call to decide.
 */
import { describe, expect, it } from 'vitest';
import {
  EMPTY_BUDGET_RECORD,
  pauseHolds,
  type BudgetLimits,
  type BudgetSpends,
  type SessionBudgetRecord,
} from '../../../src/domain/budget/decide.js';

const none: { tokens: number | null; usd: number | null } = { tokens: null, usd: null };
const limits = (session: { tokens: number | null; usd: number | null }, daily = none): BudgetLimits => ({
  session,
  principal_daily: none,
  daily,
});
const spends = (session: number, daily = 0): BudgetSpends => ({
  session: { tokens: session, usd: 0 },
  principal_daily: { tokens: daily, usd: 0 },
  daily: { tokens: daily, usd: 0 },
});
const paused = (limit: string, worst: number | null, extra: Partial<SessionBudgetRecord> = {}) => ({
  ...EMPTY_BUDGET_RECORD,
  paused: {
    limit,
    measure: 'tokens' as const,
    at: '2026-03-01T10:00:00Z',
    day: '2026-03-01',
    worst: worst === null ? null : { tokens: worst, usd: 0 },
  },
  ...extra,
});
const floor = { tokens: 1010, usd: 0 };

describe('pauseHolds', () => {
  it('admits a prompt to a session that is not paused, however little is left', () => {
    expect(pauseHolds(EMPTY_BUDGET_RECORD, spends(1490), limits({ tokens: 1500, usd: null }), floor)).toBe(
      null,
    );
  });

  it('holds while the refused call would still not fit, naming the limit', () => {
    expect(
      pauseHolds(paused('session', 2300), spends(400), limits({ tokens: 1500, usd: null }), floor),
    ).toEqual({
      limit: 'session',
      measure: 'tokens',
      spent: 400,
      limit_value: 1500,
    });
  });

  it('holds by the floor alone on a pause recorded without its worst case', () => {
    expect(
      pauseHolds(paused('session', null), spends(600), limits({ tokens: 1500, usd: null }), floor),
    ).toMatchObject({
      limit: 'session',
    });
    expect(pauseHolds(paused('session', null), spends(400), limits({ tokens: 1500, usd: null }), floor)).toBe(
      null,
    );
  });

  it('admits once a continue-once is granted, a raise makes room, or a new day empties a daily limit', () => {
    const record = paused('session', 2300);
    expect(
      pauseHolds({ ...record, continue_once: true }, spends(400), limits({ tokens: 1500, usd: null }), floor),
    ).toBe(null);
    expect(
      pauseHolds(
        { ...record, raised: { tokens: 5000, usd: null } },
        spends(400),
        limits({ tokens: 1500, usd: null }),
        floor,
      ),
    ).toBe(null);
    const daily = paused('daily', 2300);
    expect(
      pauseHolds(daily, spends(400, 1000), limits(none, { tokens: 3000, usd: null }), floor),
    ).toMatchObject({
      limit: 'daily',
    });
    expect(pauseHolds(daily, spends(400, 0), limits(none, { tokens: 3000, usd: null }), floor)).toBe(null);
  });

  it('admits when a higher configured limit has room for the refused call', () => {
    expect(pauseHolds(paused('session', 2300), spends(400), limits({ tokens: 4000, usd: null }), floor)).toBe(
      null,
    );
  });
});
