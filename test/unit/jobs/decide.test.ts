/** The pure decision of a scheduled job's tick (src/domain/jobs/decide.ts) and its schedules. */
import { describe, expect, it } from 'vitest';
import { decide, type DecisionInput } from '../../../src/domain/jobs/decide.js';
import { checkSchedule, nextAfter, type Schedule } from '../../../src/domain/jobs/schedule.js';
import { GatewayError } from '../../../src/domain/errors.js';

const at = (hhmmss: string) => new Date(`2026-03-02T${hhmmss}.000Z`);
const perMinute: Schedule = { kind: 'cron', expr: '* * * * *', tz: 'UTC' };

function input(over: Partial<DecisionInput>): DecisionInput {
  return {
    schedule: perMinute,
    policy: { catch_up: 'last', freshness_s: 3600, overlap: 'skip', max_failures: 3 },
    last_instant: null,
    created_at: at('08:00:30'),
    watching_since: at('08:00:30'),
    now: at('08:00:40'),
    busy: false,
    ...over,
  };
}

const iso = (dates: Date[]) => dates.map((d) => d.toISOString().slice(11, 19));

describe('a job tick decides', () => {
  it('nothing before the first instant', () => {
    expect(decide(input({})).advance_to).toBeNull();
  });

  it('the instant that fell due, once: the next tick finds it decided', () => {
    const first = decide(input({ now: at('08:01:02') }));
    expect(iso(first.fire)).toEqual(['08:01:00']);
    const again = decide(input({ now: at('08:01:03'), last_instant: first.advance_to }));
    expect(again.advance_to).toBeNull();
  });

  it.each([
    ['none', [], 5],
    ['last', ['08:05:00'], 4],
    ['all', ['08:01:00'], 0],
  ] as const)('after downtime with catch_up %s: fires %j, misses %d', (catch_up, fired, missed) => {
    const d = decide(
      input({
        now: at('08:05:30'),
        watching_since: at('08:05:20'),
        policy: { catch_up, freshness_s: 3600, overlap: 'queue', max_failures: 3 },
      }),
    );
    expect(iso(d.fire)).toEqual(fired);
    expect(d.missed).toBe(missed);
  });

  it('instants older than the freshness window are stale whatever the policy', () => {
    const d = decide(
      input({
        now: at('08:05:30'),
        policy: { catch_up: 'all', freshness_s: 120, overlap: 'skip', max_failures: 3 },
      }),
    );
    expect(iso(d.fire)).toEqual(['08:04:00']);
    expect(iso(d.skipped)).toEqual(['08:05:00']);
    expect(d.stale).toBe(true);
  });

  it('a busy job skips (overlap skip) or waits (overlap queue)', () => {
    const skip = decide(input({ now: at('08:01:05'), busy: true }));
    expect(iso(skip.skipped)).toEqual(['08:01:00']);
    expect(skip.fire).toEqual([]);
    const queue = decide(
      input({
        now: at('08:01:05'),
        busy: true,
        policy: { catch_up: 'last', freshness_s: 3600, overlap: 'queue', max_failures: 3 },
      }),
    );
    expect(queue.advance_to).toBeNull();
  });

  it('a long downtime costs only the window: a year of per-minute instants is not walked', () => {
    const d = decide(input({ now: new Date('2027-03-02T08:00:00.000Z') }));
    expect(d.fire).toHaveLength(1);
    expect(d.stale).toBe(true);
  });
});

describe('schedules', () => {
  it('read cron in its time zone', () => {
    const berlin: Schedule = { kind: 'cron', expr: '0 8 * * *', tz: 'Europe/Berlin' };
    expect(nextAfter(berlin, at('00:00:00'))!.toISOString()).toBe('2026-03-02T07:00:00.000Z');
  });

  it('count intervals from their anchor', () => {
    const every: Schedule = { kind: 'every', seconds: 60, anchor: '2026-03-02T08:00:30.000Z' };
    expect(nextAfter(every, at('08:03:00'))!.toISOString()).toBe('2026-03-02T08:03:30.000Z');
  });

  it.each([
    [{ kind: 'cron', expr: '* * * *', tz: 'UTC' }, 'cron'],
    [{ kind: 'cron', expr: '0 8 * * *', tz: 'Nowhere/Else' }, 'tz'],
    [{ kind: 'cron', expr: '61 8 * * *', tz: 'UTC' }, 'cron'],
    [{ kind: 'every', seconds: 5, anchor: '2026-03-02T08:00:00.000Z' }, 'every'],
    [{ kind: 'once', at: '2026-03-02T07:00:00.000Z' }, 'at'],
  ] as [Schedule, string][])('refuse %j naming %s', (schedule, field) => {
    let error: unknown;
    try {
      checkSchedule(schedule, at('08:00:00'));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).reason).toBe('invalid_schedule');
    expect((error as GatewayError).details).toMatchObject({ field });
  });
});
