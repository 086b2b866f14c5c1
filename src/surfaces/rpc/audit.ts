/**
 * The audit recorder and the per-session fence, as dispatcher hooks (issue 30). Every request that
 * names a session passes the fence before its handler; every request of an audited method leaves
 * one append-only row, refused or not: who, by which path, when, which session, and the outcome.
 * Message text is written only with `auth.audit.message_text: true`.
 *
 * An action that commits to the store (a creation, an admission, a reset, a share or its
 * revocation) writes its row in that very commit: `prepare` hands the call a draft, the domain
 * passes it to the store operation, and `settled` writes nothing more once it is recorded. Every
 * other outcome — a refusal, an answer or an interrupt (which commit nothing), a call that changed
 * nothing — gets its row on its own, before the caller is answered.
 */
import type { Capability } from '../../domain/auth/principal.js';
import type { LocalSessions } from '../../domain/local/service.js';
import type { AccessStore, AuditAction, AuditEntry } from '../../domain/ports/access-store.js';
import type { DispatchHooks, SettledCall } from '../../protocol/dispatcher.js';
import type { RpcContext } from './connection.js';

type Call = SettledCall<RpcContext>;

/** The audited methods, and the action each records (approval.respond: by its choice). */
const ACTIONS: Record<string, (call: Call) => AuditAction> = {
  'session.create': () => 'created',
  'prompt.submit': () => 'submitted',
  'session.steer': () => 'submitted',
  'delegation.start': () => 'submitted',
  'approval.respond': (call) => (call.params.choice === 'deny' ? 'denied' : 'approved'),
  'clarify.respond': () => 'answered',
  'session.interrupt': () => 'interrupted',
  'session.reset': () => 'reset',
  'session.share': () => 'shared',
  'session.unshare': () => 'unshared',
};

/** The audited methods whose action commits to the store, and so carries its row into that commit. */
const IN_COMMIT = new Set([
  'session.create',
  'prompt.submit',
  'session.steer',
  'session.reset',
  'session.share',
  'session.unshare',
]);

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

function sessionOf(call: Call): string | null {
  const named = text(call.params.session_id);
  if (named !== null) return named;
  const made = call.result as { session_id?: unknown } | undefined;
  return text(made?.session_id);
}

/** What a row says besides who and what: small facts, never a secret; text only when configured. */
function detailOf(
  call: Pick<Call, 'method' | 'params'>,
  messageText: boolean,
): Record<string, unknown> | null {
  const p = call.params;
  switch (call.method) {
    case 'prompt.submit':
      return { submission_id: p.submission_id ?? null, ...(messageText ? { text: p.text ?? null } : {}) };
    case 'session.steer':
      return {
        submission_id: p.submission_id ?? null,
        mode: 'steer',
        ...(messageText ? { text: p.text ?? null } : {}),
      };
    case 'delegation.start':
      return {
        request_id: p.request_id ?? null,
        mode: 'delegation',
        ...(messageText ? { text: p.task ?? null } : {}),
      };
    case 'approval.respond':
      return { prompt_id: p.prompt_id ?? null, choice: p.choice ?? null };
    case 'clarify.respond':
      return { prompt_id: p.prompt_id ?? null, ...(messageText ? { answer: p.answer ?? null } : {}) };
    case 'session.share':
      return { member: p.member ?? null, level: p.level ?? null };
    case 'session.unshare':
      return { member: p.member ?? null };
    default:
      return null;
  }
}

export function accessHooks(
  sessions: LocalSessions,
  access: AccessStore,
  options: { messageText: boolean; now?: () => Date },
): DispatchHooks<RpcContext> {
  const now = options.now ?? (() => new Date());
  const row = (
    call: Pick<Call, 'method' | 'params' | 'context'>,
    action: AuditAction,
    sessionId: string | null,
    outcome: string,
  ): AuditEntry => ({
    at: now().toISOString(),
    principal: call.context.principal.subject,
    path: call.context.principal.provider,
    action,
    session_id: sessionId,
    outcome,
    detail: detailOf(call, options.messageText),
  });
  return {
    prepare(method, params, context) {
      if (!IN_COMMIT.has(method)) return context;
      const call = { method, params, context, result: undefined, reason: null };
      const entry = row(call, ACTIONS[method]!(call), text(params.session_id), 'ok');
      return { ...context, audit: { entry, recorded: false } };
    },
    async guard(capability, params, context) {
      const logicalId = params.session_id;
      if (typeof logicalId !== 'string') return;
      await sessions.authorize(context.principal, logicalId, capability as Capability);
    },
    async settled(call) {
      const action = ACTIONS[call.method];
      if (!action || call.context.audit?.recorded) return;
      await access.appendAudit(row(call, action(call), sessionOf(call), call.reason ?? 'ok'));
    },
  };
}
