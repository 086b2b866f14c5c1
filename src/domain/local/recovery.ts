/**
 * Recovery of started turns (REC-1, REC-2, REC-7): every admission still `running` under another
 * epoch either resumes at its last durable step under this epoch and a new generation, or becomes
 * `unknown` with the reason in its detail. The decision is domain/session/step-resume.ts's; this applies it, then
 * starts what may run: at a cold start every session with queued work (recoverAll), and in a
 * cluster a session this member took over (SCL-1), recovered exactly as a cold start does, one
 * session at a time (recoverTaken).
 */
import type { Claimed, LocalSessionStore } from '../ports/local-store.js';
import type { TypedEmitter } from '../events/typed-emitter.js';
import type { LocalEvents } from './events.js';
import type { ReceiptGate } from './receipt-gate.js';
import type { TurnScheduler } from './scheduler.js';
import { decideRecovery, type RecoverySettings } from '../session/step-resume.js';
import { NO_TRACER, SPAN, type TurnTracer } from '../../runtime/tracing.js';

export interface RecoveryContext {
  store: LocalSessionStore;
  epoch: number;
  settings: RecoverySettings;
  receipts: ReceiptGate;
  scheduler: TurnScheduler;
  events: TypedEmitter<LocalEvents>;
  /** Turn traces: each orphan's fate is a span linked to the run it interrupted. */
  tracer?: TurnTracer;
}

export async function recoverOrphans(
  store: LocalSessionStore,
  epoch: number,
  settings: RecoverySettings,
  now: number,
  /** Validates the session's receipt (REC-1); false: the session is paused and nothing of it runs. */
  receiptValid: (logicalId: string) => Promise<boolean>,
  logicalId?: string,
  tracer: TurnTracer = NO_TRACER,
): Promise<{ unknown: string[]; resumed: Claimed[] }> {
  const unknown: string[] = [];
  const resumed: Claimed[] = [];
  for (const orphan of await store.orphans(epoch, logicalId)) {
    const decision = decideRecovery(orphan, settings, now);
    const span = tracer.linked(
      SPAN.recovery,
      { turnId: orphan.admission_id, run: orphan.resumes },
      {
        'gatehouse.engine': 'local',
        'gatehouse.session.id': orphan.logical_id,
        'gatehouse.admission.id': orphan.admission_id,
        'gatehouse.recovery.tool_started': orphan.tool_started,
      },
    );
    if (decision.kind === 'resume') {
      const claimed = (await receiptValid(orphan.logical_id))
        ? await store.resumeOrphan(orphan.admission_id, epoch)
        : null;
      if (claimed) {
        resumed.push(claimed);
        span.set({ 'gatehouse.recovery.result': 'resumed', 'gatehouse.turn.run': claimed.admission.resumes });
        span.end();
        continue;
      }
    }
    const detail =
      decision.kind === 'unknown' ? decision.detail : 'paused: the session receipt did not validate';
    span.set({
      'gatehouse.recovery.result': 'unknown',
      'gatehouse.recovery.reason': decision.kind === 'unknown' ? decision.reason : 'paused',
    });
    span.end();
    if (await store.markUnknown(orphan.admission_id, epoch, detail)) unknown.push(orphan.admission_id);
  }
  // Whatever is still running from an older epoch (nothing, unless written meanwhile) is unknown.
  unknown.push(...(await store.markOrphansUnknown(epoch, logicalId)).map((a) => a.admission_id));
  return { unknown, resumed };
}

/**
 * Cold start (REC-1, REC-2, REC-7): each admission that was running in an older epoch resumes at
 * its last durable step under a new generation, or becomes `unknown` with the reason
 * (decideRecovery); sessions with queued work get their receipts validated and their queues
 * started. Cost follows what is queued, not the stored history: other sessions are validated on
 * first use.
 */
export async function recoverAll(ctx: RecoveryContext): Promise<LocalEvents['recovery:done']> {
  const { store, epoch, receipts, scheduler } = ctx;
  const { unknown, resumed } = await recoverOrphans(
    store,
    epoch,
    ctx.settings,
    Date.now(),
    (logicalId) => receipts.ensure(logicalId),
    undefined,
    ctx.tracer,
  );
  const queued = await store.sessionsWithQueued();
  const paused: string[] = [];
  const ready: string[] = [];
  for (const logicalId of queued) {
    if (await receipts.ensure(logicalId)) ready.push(logicalId);
    else paused.push(logicalId);
  }
  // Turns start only once everything is read, after the last await: nothing of recovery runs
  // beside them, and the caller (the daemon's start) goes on in this same tick.
  for (const claimed of resumed) scheduler.resume(claimed);
  for (const logicalId of ready) scheduler.kick(logicalId);
  const done = {
    epoch,
    unknown,
    resumed: resumed.map((c) => c.admission.admission_id),
    queued_sessions: queued.length,
    paused,
  };
  ctx.events.emit('recovery:done', done);
  return done;
}

/**
 * SCL-1: a session whose lease this instance just took recovers exactly as at a cold start (its
 * started turn resumes or becomes `unknown`, REC-7; its queue runs), scoped to that session. The
 * caller drops what it kept of the session in memory first: another instance may have changed it.
 */
export async function recoverTaken(
  ctx: RecoveryContext,
  logicalId: string,
): Promise<LocalEvents['session:taken']> {
  const { store, epoch, receipts, scheduler } = ctx;
  const { unknown, resumed } = await recoverOrphans(
    store,
    epoch,
    ctx.settings,
    Date.now(),
    (id) => receipts.ensure(id),
    logicalId,
    ctx.tracer,
  );
  const ready = await receipts.ensure(logicalId);
  const taken = {
    logical_id: logicalId,
    unknown,
    resumed: resumed.map((c) => c.admission.admission_id),
  };
  ctx.events.emit('session:taken', taken);
  for (const claimed of resumed) scheduler.resume(claimed);
  if (ready) scheduler.kick(logicalId);
  return taken;
}
