/**
 * The jobs.* methods of the RPC API (issue 28, docs/scheduling.md): closed param schemas, the
 * capability each needs, and a hand-off to the job service.
 */
import { z } from 'zod';
import { createSessionParams } from '../../domain/local/launch-params.js';
import { CATCH_UP, OVERLAP } from '../../domain/jobs/decide.js';
import type { JobDelivery, JobTarget } from '../../domain/jobs/job.js';
import type { AddJobParams, JobService } from '../../domain/jobs/service.js';
import { GatewayError } from '../../domain/errors.js';
import type { Dispatcher } from '../../protocol/dispatcher.js';
import type { RpcContext } from './connection.js';

const id = z.string().min(1).max(200);

export const JOB_METHOD_SCHEMAS = {
  'jobs.add': z.strictObject({
    request_id: id,
    name: z.string().trim().min(1).max(200).optional(),
    /** Exactly one of cron (with tz), every_s and at. */
    cron: z.string().trim().min(1).max(200).optional(),
    tz: z.string().trim().min(1).max(100).optional(),
    every_s: z.number().int().optional(),
    at: z.string().trim().min(1).max(100).optional(),
    /** Exactly one of session_id (an existing session) and new_session (its launch policy). */
    session_id: id.optional(),
    new_session: createSessionParams.omit({ request_id: true, api_key: true }).optional(),
    text: z.string().min(1).max(100_000),
    /** `session`, or `home:<platform>`: also the platform's home channel (docs/scheduling.md). */
    deliver: z
      .string()
      .regex(/^(session|home:[A-Za-z0-9_-]{1,50})$/, {
        error: 'must be "session" or "home:<platform>" (a platform with a home channel, e.g. home:telegram)',
      })
      .default('session'),
    catch_up: z.enum(CATCH_UP).optional(),
    freshness_s: z
      .number()
      .int()
      .min(1)
      .max(31 * 86_400)
      .optional(),
    overlap: z.enum(OVERLAP).optional(),
    max_failures: z.number().int().min(1).max(1000).optional(),
  }),
  'jobs.list': z.strictObject({}),
  'jobs.pause': z.strictObject({ job_id: id }),
  'jobs.resume': z.strictObject({ job_id: id }),
  'jobs.remove': z.strictObject({ job_id: id }),
  'jobs.run_now': z.strictObject({ job_id: id, request_id: id }),
} as const;

type AddParams = z.infer<(typeof JOB_METHOD_SCHEMAS)['jobs.add']>;

function exactlyOne(p: Record<string, unknown>, fields: string[], what: string): string {
  const given = fields.filter((f) => p[f] !== undefined);
  if (given.length !== 1) {
    throw new GatewayError('invalid_params', `${what}: give exactly one of ${fields.join(', ')}`, {
      field: given[1] ?? fields[0],
    });
  }
  return given[0]!;
}

/** The wire's flat fields as the service's parameters, refusing what does not go together. */
export function addParams(p: AddParams): AddJobParams {
  const when = exactlyOne(p, ['cron', 'every_s', 'at'], 'the schedule');
  if (p.tz !== undefined && when !== 'cron')
    throw new GatewayError('invalid_params', 'tz goes with cron only', { field: 'tz' });
  const where = exactlyOne(p, ['session_id', 'new_session'], 'the target');
  const target: JobTarget =
    where === 'session_id'
      ? { kind: 'session', session_id: p.session_id! }
      : { kind: 'new_session', launch: p.new_session! };
  return {
    request_id: p.request_id,
    name: p.name,
    schedule:
      when === 'cron'
        ? { cron: p.cron!, tz: p.tz }
        : when === 'every_s'
          ? { every_s: p.every_s! }
          : { at: p.at! },
    target,
    text: p.text,
    deliver: p.deliver as JobDelivery,
    policy: {
      ...(p.catch_up === undefined ? {} : { catch_up: p.catch_up }),
      ...(p.freshness_s === undefined ? {} : { freshness_s: p.freshness_s }),
      ...(p.overlap === undefined ? {} : { overlap: p.overlap }),
      ...(p.max_failures === undefined ? {} : { max_failures: p.max_failures }),
    },
  };
}

export function registerJobMethods(dispatcher: Dispatcher<RpcContext>, jobs: JobService): void {
  const s = JOB_METHOD_SCHEMAS;
  dispatcher
    .register('jobs.add', {
      params: s['jobs.add'],
      capability: 'session:submit',
      handler: (p, c) => jobs.add(c.principal, addParams(p)),
    })
    .register('jobs.list', {
      params: s['jobs.list'],
      capability: 'session:read',
      handler: (_p, c) => jobs.list(c.principal),
    })
    .register('jobs.pause', {
      params: s['jobs.pause'],
      capability: 'session:control',
      handler: (p, c) => jobs.pause(c.principal, p.job_id),
    })
    .register('jobs.resume', {
      params: s['jobs.resume'],
      capability: 'session:control',
      handler: (p, c) => jobs.resume(c.principal, p.job_id),
    })
    .register('jobs.remove', {
      params: s['jobs.remove'],
      capability: 'session:control',
      handler: (p, c) => jobs.remove(c.principal, p.job_id),
    })
    .register('jobs.run_now', {
      params: s['jobs.run_now'],
      capability: 'session:submit',
      handler: (p, c) => jobs.runNow(c.principal, p.job_id, p.request_id),
    });
}
