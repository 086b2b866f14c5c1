/**
 * The session methods of the RPC API (SPEC LOC-1..12): closed param schemas, the capability each
 * needs, and a one-line hand-off to the local-session service. Errors are thrown as GatewayError and
 * mapped to wire errors by the dispatcher.
 */
import { z } from 'zod';
import { createSessionParams } from '../../domain/local/launch-params.js';
import { MCP_SERVERS_SCHEMA } from '../../runtime/mcp/config.js';
import type { LocalSessions } from '../../domain/local/service.js';
import { TITLE_MAX } from '../../domain/local/titles.js';
import { GatewayError } from '../../domain/errors.js';
import type { Dispatcher } from '../../protocol/dispatcher.js';
import type { RpcContext } from './connection.js';

const id = z.string().min(1).max(200);
const generation = z.number().int().min(0);
const title = z
  .string()
  .trim()
  .min(1)
  .max(TITLE_MAX)
  // eslint-disable-next-line no-control-regex
  .regex(/^[^\u0000-\u001f\u007f]*$/, 'a title is one line without control characters');

export const SESSION_METHOD_SCHEMAS = {
  'session.create': createSessionParams,
  'session.resume': z.strictObject({
    session_id: id,
    message_limit: z.number().int().min(1).max(1000).optional(),
  }),
  'session.detach': z.strictObject({ session_id: id }),
  'session.list': z.strictObject({
    limit: z.number().int().min(1).max(500).default(50),
    scope: z.enum(['live', 'stored', 'all']).default('live'),
    /** With scope "stored" or "all": the next_cursor of the previous page. */
    cursor: z.string().min(1).max(1000).optional(),
    /** true: only the archived sessions (issue 31); false (default): only the others. */
    archived: z.boolean().default(false),
  }),
  'session.messages': z.strictObject({
    session_id: id,
    before_id: z.number().int().min(1).optional(),
    limit: z.number().int().min(1).max(1000).default(200),
  }),
  'session.info': z.strictObject({ session_id: id }),
  'session.cost': z.strictObject({ session_id: id }),
  'session.context': z.strictObject({ session_id: id }),
  'session.budget': z.strictObject({ session_id: id }),
  'session.budget.raise': z
    .strictObject({
      session_id: id,
      tokens: z.number().int().min(1).optional(),
      usd: z.number().positive().optional(),
    })
    .refine((p) => p.tokens !== undefined || p.usd !== undefined, { error: 'name tokens, usd or both' }),
  'session.budget.continue': z.strictObject({ session_id: id }),
  'cost.summary': z.strictObject({
    /** First and last UTC day, `YYYY-MM-DD`; absent: unbounded. */
    from_day: z.iso.date().optional(),
    to_day: z.iso.date().optional(),
    /** Operators only: one principal's turns (a subject such as `native:owner` or `telegram:42`). */
    principal: z.string().min(1).max(200).optional(),
  }),
  'session.title': z.strictObject({ session_id: id, title }),
  'session.fork': z.strictObject({
    session_id: id,
    /** The last message the fork keeps (an id of session.resume / session.messages); absent: the last. */
    message_id: z.number().int().min(1).optional(),
    title: title.optional(),
    request_id: id.optional(),
  }),
  'session.archive': z.strictObject({ session_id: id, archived: z.boolean().default(true) }),
  'session.delete': z.strictObject({ session_id: id }),
  'session.lineage': z.strictObject({ session_id: id }),
  'session.turns': z.strictObject({ session_id: id, limit: z.number().int().min(1).max(100).default(20) }),
  'session.history': z.strictObject({ session_id: id, view: z.enum(['full', 'model']).default('full') }),
  'session.search': z.strictObject({
    query: z.string().trim().min(1).max(1000),
    limit: z.number().int().min(1).max(500).default(20),
    /** `plain`: words, every one must appear; `fts`: SQLite FTS5 query syntax (docs/rpc-methods.md). */
    syntax: z.enum(['plain', 'fts']).default('plain'),
  }),
  'session.events.since': z.strictObject({
    session_id: id,
    epoch: z.number().int().min(0),
    after_seq: z.number().int().min(0),
  }),
  'prompt.submit': z.strictObject({
    session_id: id,
    submission_id: id,
    text: z.string().min(1).max(1_000_000),
  }),
  'session.steer': z.strictObject({
    session_id: id,
    submission_id: id,
    text: z.string().min(1).max(1_000_000),
  }),
  'prompt.cancel': z.strictObject({ session_id: id, admission_id: id }),
  'prompt.resolve_unknown': z.strictObject({
    session_id: id,
    admission_id: id,
    execution_generation: generation,
  }),
  'session.interrupt': z.strictObject({ session_id: id, execution_generation: generation }),
  'session.compress': z.strictObject({ session_id: id, execution_generation: generation.optional() }),
  'session.reset': z.strictObject({ session_id: id, request_id: id }),
  'session.undo': z.strictObject({
    session_id: id,
    request_id: id,
    turns: z.number().int().min(1).max(1000).default(1),
  }),
  'session.retry': z.strictObject({ session_id: id, request_id: id }),
  'session.mcp.supply': z.strictObject({ session_id: id, mcp_servers: MCP_SERVERS_SCHEMA }),
  'session.model': z.strictObject({
    session_id: id,
    provider: z.string().trim().min(1).max(100).optional(),
    model: z.string().trim().min(1).max(200),
  }),
  'checkpoint.list': z.strictObject({ session_id: id }),
  'checkpoint.restore': z.strictObject({ session_id: id, checkpoint: z.number().int().min(1) }),
  'approval.respond': z.strictObject({
    session_id: id,
    execution_generation: generation,
    prompt_id: id,
    choice: z.enum(['once', 'session', 'always', 'deny']),
  }),
  'clarify.respond': z.strictObject({
    session_id: id,
    execution_generation: generation,
    prompt_id: id,
    answer: z.union([z.string().max(100_000), z.array(z.string().max(10_000)).max(100)]),
  }),
} as const;

function checkpointsOf(sessions: LocalSessions): NonNullable<LocalSessions['checkpoints']> {
  if (sessions.checkpoints) return sessions.checkpoints;
  throw new GatewayError('invalid_params', 'this gateway keeps no checkpoints');
}

export function registerSessionMethods(dispatcher: Dispatcher<RpcContext>, sessions: LocalSessions): void {
  const s = SESSION_METHOD_SCHEMAS;
  dispatcher
    .register('session.create', {
      params: s['session.create'],
      capability: 'session:create',
      handler: (p, c) => sessions.create(c.principal, p, c.audit),
    })
    .register('session.resume', {
      params: s['session.resume'],
      capability: 'session:read',
      // Written as JSON only: a whole transcript comes serialized, read off the event loop.
      handler: (p, c) =>
        sessions.resume(c.principal, c.connection, p.session_id, p.message_limit, { serialized: true }),
    })
    .register('session.detach', {
      params: s['session.detach'],
      capability: 'session:read',
      handler: (p, c) => sessions.detach(c.principal, c.connection.id, p.session_id),
    })
    .register('session.list', {
      params: s['session.list'],
      capability: 'session:read',
      handler: (p, c) => {
        const page = { limit: p.limit, cursor: p.cursor ?? null, archived: p.archived };
        if (p.scope === 'all') return sessions.reads.listAll(c.principal, page);
        if (p.scope === 'stored') return sessions.reads.listStored(c.principal, page);
        // The live scope is one page: a cursor there would be accepted and ignored.
        if (p.cursor !== undefined)
          throw new GatewayError('invalid_params', 'cursor pages scope "stored" or "all", not "live"', {
            field: 'cursor',
          });
        return sessions.reads.list(c.principal, { limit: p.limit, archived: p.archived });
      },
    })
    .register('session.messages', {
      params: s['session.messages'],
      capability: 'session:read',
      handler: (p, c) =>
        sessions.reads.messages(c.principal, {
          session_id: p.session_id,
          before_id: p.before_id ?? null,
          limit: p.limit,
        }),
    })
    .register('session.info', {
      params: s['session.info'],
      capability: 'session:read',
      handler: (p, c) => sessions.info(c.principal, p.session_id),
    })
    .register('session.cost', {
      params: s['session.cost'],
      capability: 'session:read',
      handler: (p, c) => sessions.spend.cost(c.principal, p.session_id),
    })
    .register('session.context', {
      params: s['session.context'],
      capability: 'session:read',
      handler: (p, c) => sessions.reads.context(c.principal, p.session_id),
    })
    .register('session.budget', {
      params: s['session.budget'],
      capability: 'session:read',
      handler: (p, c) => sessions.spend.budget(c.principal, p.session_id),
    })
    .register('session.budget.raise', {
      params: s['session.budget.raise'],
      capability: 'session:operator',
      handler: (p, c) => sessions.spend.raiseBudget(c.principal, p.session_id, p),
    })
    .register('session.budget.continue', {
      params: s['session.budget.continue'],
      capability: 'session:control',
      handler: (p, c) => sessions.spend.continueBudget(c.principal, p.session_id),
    })
    .register('cost.summary', {
      params: s['cost.summary'],
      capability: 'session:read',
      handler: (p, c) => sessions.spend.costSummary(c.principal, p),
    })
    .register('session.title', {
      params: s['session.title'],
      capability: 'session:control',
      handler: (p, c) => sessions.retitle(c.principal, p.session_id, p.title),
    })
    .register('session.fork', {
      params: s['session.fork'],
      capability: 'session:create',
      handler: (p, c) => sessions.fork(c.principal, p),
    })
    .register('session.archive', {
      params: s['session.archive'],
      capability: 'session:control',
      handler: (p, c) => sessions.archive(c.principal, p),
    })
    .register('session.delete', {
      params: s['session.delete'],
      capability: 'session:control',
      handler: (p, c) => sessions.delete(c.principal, p),
    })
    .register('session.lineage', {
      params: s['session.lineage'],
      capability: 'session:read',
      handler: (p, c) => sessions.lineage(c.principal, p.session_id),
    })
    .register('session.turns', {
      params: s['session.turns'],
      capability: 'session:read',
      handler: (p, c) => sessions.reads.turns(c.principal, p.session_id, p.limit),
    })
    .register('session.history', {
      params: s['session.history'],
      capability: 'session:read',
      handler: (p, c) => sessions.reads.history(c.principal, p.session_id, p.view, { serialized: true }),
    })
    .register('session.search', {
      params: s['session.search'],
      capability: 'session:read',
      handler: (p, c) => sessions.reads.search(c.principal, p),
    })
    .register('session.events.since', {
      params: s['session.events.since'],
      capability: 'session:read',
      handler: (p, c) => sessions.eventsSince(c.principal, p.session_id, p.epoch, p.after_seq),
    })
    .register('prompt.submit', {
      params: s['prompt.submit'],
      capability: 'session:submit',
      handler: (p, c) => sessions.inputs.submit(c.principal, p, c.audit),
    })
    .register('session.steer', {
      params: s['session.steer'],
      capability: 'session:submit',
      handler: (p, c) => sessions.inputs.submit(c.principal, { ...p, mode: 'steer' }, c.audit),
    })
    .register('prompt.cancel', {
      params: s['prompt.cancel'],
      capability: 'session:control',
      handler: (p, c) => sessions.inputs.cancel(c.principal, p.session_id, p.admission_id),
    })
    .register('prompt.resolve_unknown', {
      params: s['prompt.resolve_unknown'],
      capability: 'session:control',
      handler: (p, c) =>
        sessions.inputs.resolveUnknown(c.principal, p.session_id, p.admission_id, p.execution_generation),
    })
    .register('session.interrupt', {
      params: s['session.interrupt'],
      capability: 'session:control',
      handler: (p, c) => sessions.interrupt(c.principal, p.session_id, p.execution_generation),
    })
    .register('session.compress', {
      params: s['session.compress'],
      capability: 'session:control',
      handler: (p, c) => sessions.controls.compress(c.principal, p),
    })
    .register('session.reset', {
      params: s['session.reset'],
      capability: 'session:control',
      handler: (p, c) => sessions.controls.reset(c.principal, p, c.audit),
    })
    .register('session.undo', {
      params: s['session.undo'],
      capability: 'session:control',
      handler: (p, c) => sessions.controls.undo(c.principal, p),
    })
    .register('session.retry', {
      params: s['session.retry'],
      capability: 'session:control',
      handler: (p, c) => sessions.controls.retry(c.principal, p),
    })
    .register('session.mcp.supply', {
      params: s['session.mcp.supply'],
      capability: 'session:control',
      handler: (p, c) => sessions.supplyMcp(c.principal, p),
    })
    .register('session.model', {
      params: s['session.model'],
      capability: 'session:control',
      handler: (p, c) => sessions.controls.model(c.principal, p),
    })
    .register('checkpoint.list', {
      params: s['checkpoint.list'],
      capability: 'session:read',
      handler: (p, c) => checkpointsOf(sessions).list(c.principal, p.session_id),
    })
    .register('checkpoint.restore', {
      params: s['checkpoint.restore'],
      capability: 'session:control',
      handler: (p, c) => {
        checkpointsOf(sessions);
        return sessions.controls.restore(c.principal, p);
      },
    })
    .register('approval.respond', {
      params: s['approval.respond'],
      capability: 'session:approve',
      handler: (p, c) => sessions.respondApproval(c.principal, p),
    })
    .register('clarify.respond', {
      params: s['clarify.respond'],
      capability: 'session:respond',
      handler: (p, c) => sessions.respondClarify(c.principal, p),
    });
}
