/**
 * The checkpoint guard: before a tool that may change files in the cwd (`changesFiles`), the
 * working tree is saved as a checkpoint of the session. A tree over the limits (or a git failure)
 * is not saved, and both the viewers (`checkpoint.skipped`) and the model (a note on the result)
 * are told; the tool call itself always goes on.
 */
import { redactSecrets } from '../approvals/redact.js';
import type { CheckpointStore } from '../checkpoints/store.js';
import { PROCEED, type GuardedCall, type GuardVerdict, type ToolGuard } from '../tool-guards.js';
import type { LifecycleScope } from './session-lifecycle.js';

const LABEL_MAX = 160;

export function checkpointGuard(store: CheckpointStore, scope: LifecycleScope): ToolGuard {
  return {
    async before(call: GuardedCall): Promise<GuardVerdict> {
      if (call.tool.changesFiles !== true) return PROCEED;
      const tool = call.tool.name;
      let skipped: string;
      try {
        const outcome = await store.snapshot(scope.sessionId, scope.cwd, {
          kind: 'tool',
          tool,
          label: labelOf(tool, call.args),
          admission_id: scope.admissionId ?? null,
        });
        if (outcome.kind === 'created') {
          const { checkpoint, label, files, bytes } = outcome.checkpoint;
          scope.publish({ type: 'checkpoint.created', checkpoint, tool, label, files, bytes });
          return PROCEED;
        }
        if (outcome.kind === 'unchanged') return PROCEED;
        skipped = outcome.reason;
      } catch (error) {
        skipped = `the snapshot failed: ${error instanceof Error ? error.message : String(error)}`;
      }
      scope.publish({ type: 'checkpoint.skipped', tool, reason: skipped });
      return { proceed: true, notes: [`no checkpoint was taken before this call: ${skipped}`] };
    },
  };
}

/** One line naming the call: the command of a terminal call, the path of a write, else the arguments. */
export function labelOf(tool: string, args: Record<string, unknown>): string {
  const main =
    typeof args['command'] === 'string'
      ? args['command']
      : typeof args['path'] === 'string'
        ? args['path']
        : JSON.stringify(args);
  const line = `${tool}: ${redactSecrets(main).replace(/\s+/g, ' ').trim()}`;
  return line.length > LABEL_MAX ? `${line.slice(0, LABEL_MAX - 1)}…` : line;
}
