/**
 * Schedules of scheduled jobs (issue 28, docs/scheduling.md): when a job is due. Three kinds:
 *
 *   cron   a five-field cron expression read in an IANA time zone (croner does the calendar work:
 *          months, weekdays, daylight-saving gaps and repeats)
 *   every  an interval in seconds, counted from the job's anchor (its creation instant)
 *   once   one instant
 *
 * Pure: every function takes the instants it reasons about; nothing here reads a clock.
 */
import { Cron } from 'croner';
import { GatewayError } from '../errors.js';

export type Schedule =
  | { kind: 'cron'; expr: string; tz: string }
  | { kind: 'every'; seconds: number; anchor: string }
  | { kind: 'once'; at: string };

/** The shortest interval a job may have: a schedule tighter than this is a loop, not a job. */
export const MIN_INTERVAL_S = 10;

function invalidSchedule(message: string, details: Record<string, unknown>): GatewayError {
  return new GatewayError('invalid_schedule', message, details);
}

function cronOf(expr: string, tz: string): Cron {
  return new Cron(expr, { timezone: tz, paused: true });
}

/** Checks a schedule as given by a caller; throws invalid_schedule saying what is wrong. */
export function checkSchedule(schedule: Schedule, now: Date): void {
  switch (schedule.kind) {
    case 'cron': {
      const fields = schedule.expr.trim().split(/\s+/);
      if (fields.length !== 5) {
        throw invalidSchedule(
          `cron "${schedule.expr}" has ${fields.length} fields; a job's cron has five: minute hour day-of-month month day-of-week`,
          { field: 'cron' },
        );
      }
      let cron: Cron;
      try {
        cron = cronOf(schedule.expr, schedule.tz);
        cron.nextRun(now);
      } catch (error) {
        const why = error instanceof Error ? error.message.split('. ')[0] : String(error);
        throw invalidSchedule(`cron "${schedule.expr}" in time zone ${schedule.tz} is not valid: ${why}`, {
          field: /timezone|time zone/i.test(String(why)) ? 'tz' : 'cron',
        });
      }
      if (cron.nextRun(now) === null)
        throw invalidSchedule(`cron "${schedule.expr}" never fires after ${now.toISOString()}`, {
          field: 'cron',
        });
      return;
    }
    case 'every':
      if (!Number.isInteger(schedule.seconds) || schedule.seconds < MIN_INTERVAL_S)
        throw invalidSchedule(`an interval is a whole number of seconds, at least ${MIN_INTERVAL_S}`, {
          field: 'every',
        });
      return;
    case 'once':
      if (Date.parse(schedule.at) <= now.getTime())
        throw invalidSchedule(`the instant ${schedule.at} has passed (now ${now.toISOString()})`, {
          field: 'at',
        });
      return;
  }
}

/** The first scheduled instant strictly after `after`, or null when there is none. */
export function nextAfter(schedule: Schedule, after: Date): Date | null {
  switch (schedule.kind) {
    case 'cron':
      return cronOf(schedule.expr, schedule.tz).nextRun(after);
    case 'every': {
      const anchor = Date.parse(schedule.anchor);
      const step = schedule.seconds * 1000;
      const k = Math.max(1, Math.floor((after.getTime() - anchor) / step) + 1);
      return new Date(anchor + k * step);
    }
    case 'once': {
      const at = new Date(schedule.at);
      return at.getTime() > after.getTime() ? at : null;
    }
  }
}

/**
 * The scheduled instants in (after, upTo], oldest first, at most `limit` of the newest; `earlier`
 * tells whether older ones in the range were left out.
 */
export function instantsBetween(
  schedule: Schedule,
  after: Date,
  upTo: Date,
  limit: number,
): { instants: Date[]; earlier: boolean } {
  const instants: Date[] = [];
  let earlier = false;
  for (
    let t = nextAfter(schedule, after);
    t !== null && t.getTime() <= upTo.getTime();
    t = nextAfter(schedule, t)
  ) {
    instants.push(t);
    if (instants.length > limit) {
      instants.shift();
      earlier = true;
    }
  }
  return { instants, earlier };
}

/** How a schedule reads in a list: `cron 0 8 * * * (Europe/Berlin)`, `every 3600s`, `once at …`. */
export function describeSchedule(schedule: Schedule): string {
  switch (schedule.kind) {
    case 'cron':
      return `cron ${schedule.expr} (${schedule.tz})`;
    case 'every':
      return `every ${schedule.seconds}s`;
    case 'once':
      return `once at ${schedule.at}`;
  }
}
