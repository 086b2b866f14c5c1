/**
 * Checkpoints of a local session as the RPC offers them (LOC-5 `checkpoints`): `checkpoint.list`
 * and `checkpoint.restore`. A restore
 *
 * - is refused for a session created without `checkpoints: true`, and with `session_busy` while a
 *   turn runs; once it started it holds the session's turn slot, so no turn starts beside it;
 * - asks a human first, always (also in a yolo session): an `edit` approval (once | deny) through
 *   the prompt broker, bound to the session's current execution generation, that every viewer sees
 *   and `approval.respond` answers. Denied or unanswered, nothing changes;
 * - saves the state it replaces as a checkpoint of its own, then restores, and tells the viewers
 *   (`checkpoint.restored`).
 */
import { CheckpointError, type Checkpoint, type CheckpointStore } from '../../runtime/checkpoints/store.js';
import type { PromptHost, TurnEvent } from '../../runtime/types.js';
import type { LocalSessionStore } from '../ports/local-store.js';
import type { Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import type { AccessRow } from './access.js';
import type { PublicEvent } from './hub.js';
import { refusePaused } from './inputs.js';
import type { CreationReceipt } from './receipt.js';
import type { TurnScheduler } from './scheduler.js';

export interface RollbackContext {
  store: LocalSessionStore;
  scheduler: TurnScheduler;
  prompts: PromptHost;
  checkpoints: CheckpointStore;
  access(principal: Principal, logicalId: string): Promise<AccessRow>;
  receipt(logicalId: string): CreationReceipt | undefined;
  publish(logicalId: string, event: PublicEvent): void;
  assertAccepting(): void;
}

export class SessionCheckpoints {
  constructor(private readonly ctx: RollbackContext) {}

  async list(principal: Principal, logicalId: string): Promise<Record<string, unknown>> {
    const { cwd } = await this.open(principal, logicalId);
    const checkpoints = await this.ctx.checkpoints.list(logicalId, cwd);
    return { session_id: logicalId, cwd, checkpoints: checkpoints.map(publicCheckpoint) };
  }

  async restore(
    principal: Principal,
    params: { session_id: string; checkpoint: number },
  ): Promise<Record<string, unknown>> {
    this.ctx.assertAccepting();
    const id = params.session_id;
    const { cwd } = await this.open(principal, id);
    const running = this.ctx.scheduler.running(id);
    if (running !== null) {
      throw new GatewayError(
        'session_busy',
        `a turn of session ${id} is running: wait until it settles (or interrupt it), then restore`,
        { session_id: id, running },
      );
    }
    return this.ctx.scheduler.exclusive(id, async () => {
      const target = (await this.ctx.checkpoints.list(id, cwd)).find(
        (c) => c.checkpoint === params.checkpoint,
      );
      if (!target) {
        throw new GatewayError('not_found', `session ${id} has no checkpoint ${params.checkpoint}`, {
          session_id: id,
          checkpoint: params.checkpoint,
        });
      }
      const approval = await this.ctx.prompts.requestApproval(await this.scope(id), {
        kind: 'edit',
        command: `rollback to checkpoint ${target.checkpoint} (${target.label}, ${target.created_at})`,
        reason: 'puts the files of the working directory back as they were; files created since are removed',
      });
      if (approval.kind !== 'approved') {
        return { session_id: id, checkpoint: target.checkpoint, restored: false, why: approval.kind };
      }
      try {
        const done = await this.ctx.checkpoints.restore(id, cwd, target.checkpoint);
        const result = {
          checkpoint: done.restored.checkpoint,
          saved_as: done.saved.checkpoint,
          recreated: done.recreated,
          reverted: done.reverted,
          removed: done.removed,
        };
        this.ctx.publish(id, { type: 'checkpoint.restored', ...result });
        return { session_id: id, restored: true, ...result };
      } catch (error) {
        if (error instanceof CheckpointError && error.reason === 'too_large') {
          return { session_id: id, checkpoint: target.checkpoint, restored: false, why: error.message };
        }
        if (error instanceof CheckpointError) throw new GatewayError('not_found', error.message);
        throw error;
      }
    });
  }

  /** The session's cwd, if the caller may use its checkpoints. */
  private async open(principal: Principal, logicalId: string): Promise<{ cwd: string }> {
    const session = await this.ctx.access(principal, logicalId);
    refusePaused(session);
    const policy = this.ctx.receipt(logicalId)?.policy;
    if (!policy) throw new Error(`session ${logicalId} has no validated receipt`);
    if (!policy.checkpoints) {
      throw new GatewayError(
        'invalid_params',
        `session ${logicalId} was created without checkpoints: create a session with checkpoints: true (gatehouse chat --checkpoints) to take them`,
        { session_id: logicalId, field: 'checkpoints' },
      );
    }
    return { cwd: policy.cwd };
  }

  /** The approval belongs to no turn: it is bound to the session's current generation. */
  private async scope(logicalId: string) {
    return {
      sessionId: logicalId,
      admissionId: undefined,
      executionGeneration: (await this.ctx.store.getLocalSession(logicalId))?.generation ?? 0,
      signal: new AbortController().signal,
      emit: (event: TurnEvent) => this.ctx.publish(logicalId, event),
    };
  }
}

function publicCheckpoint(c: Checkpoint): Record<string, unknown> {
  return {
    checkpoint: c.checkpoint,
    created_at: c.created_at,
    kind: c.kind,
    tool: c.tool,
    label: c.label,
    files: c.files,
    bytes: c.bytes,
    admission_id: c.admission_id,
    commit: c.commit,
  };
}
