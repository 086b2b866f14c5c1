/**
 * Cold-start recovery of started turns (REC-2, REC-7): every admission still `running` under another
 * epoch either resumes at its last durable step under this epoch and a new generation, or becomes
 * `unknown` with the reason in its detail. The decision is domain/session/step-resume.ts's; this applies it.
 * With `logicalId`, only that session's: a cluster member recovers a session it took over (SCL-1)
 * exactly as a cold start does, one session at a time.
 */
import type { Claimed, LocalSessionStore } from '../ports/local-store.js';
import { decideRecovery, type RecoverySettings } from '../session/step-resume.js';

export async function recoverOrphans(
  store: LocalSessionStore,
  epoch: number,
  settings: RecoverySettings,
  now: number,
  /** Validates the session's receipt (REC-1); false: the session is paused and nothing of it runs. */
  receiptValid: (logicalId: string) => Promise<boolean>,
  logicalId?: string,
): Promise<{ unknown: string[]; resumed: Claimed[] }> {
  const unknown: string[] = [];
  const resumed: Claimed[] = [];
  for (const orphan of await store.orphans(epoch, logicalId)) {
    const decision = decideRecovery(orphan, settings, now);
    if (decision.kind === 'resume') {
      const claimed = (await receiptValid(orphan.logical_id))
        ? await store.resumeOrphan(orphan.admission_id, epoch)
        : null;
      if (claimed) {
        resumed.push(claimed);
        continue;
      }
    }
    const detail =
      decision.kind === 'unknown' ? decision.detail : 'paused: the session receipt did not validate';
    if (await store.markUnknown(orphan.admission_id, epoch, detail)) unknown.push(orphan.admission_id);
  }
  // Whatever is still running from an older epoch (nothing, unless written meanwhile) is unknown.
  unknown.push(...(await store.markOrphansUnknown(epoch, logicalId)).map((a) => a.admission_id));
  return { unknown, resumed };
}
