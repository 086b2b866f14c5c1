/**
 * The torture harness's human: it attaches to every known session and approves each approval
 * prompt whose command carries APPROVE_MARK (the others time out), recording when it first
 * approved each submission, so the checks can prove an approved command ran only after its
 * approval and at most once. It also follows what recovery did with the turns a kill left running
 * (refreshUnknowns): resumed ones are no longer to be resolved, unknown ones carry their reason.
 */
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import type { Ledger } from './client.js';
import type { StoreEvidence } from './evidence.js';

export const APPROVE_MARK = '# approve';

interface PromptLike {
  type?: string;
  prompt_id?: string;
  execution_generation?: number;
  command?: string;
}

/** The submission id an approved-workload command names (`echo <id> …`). */
export function submissionOfCommand(command: string): string | null {
  return /^echo (\S+) /.exec(command)?.[1] ?? null;
}

export async function approveMarked(
  g: GatewayClient,
  ledger: Ledger,
  approvals: Map<string, number>,
  stop: AbortSignal,
): Promise<void> {
  const answered = new Set<string>();
  const approve = async (sessionId: string, prompt: PromptLike): Promise<void> => {
    const command = prompt.command ?? '';
    if (prompt.type !== 'approval.request' || !command.includes(APPROVE_MARK)) return;
    const key = `${prompt.prompt_id}@${prompt.execution_generation}`;
    if (answered.has(key)) return;
    answered.add(key);
    const id = submissionOfCommand(command);
    if (id !== null && !approvals.has(id)) approvals.set(id, Date.now());
    await g
      .call('approval.respond', {
        session_id: sessionId,
        prompt_id: prompt.prompt_id,
        execution_generation: prompt.execution_generation,
        choice: 'once',
      })
      .catch(() => undefined); // timed out or stale meanwhile: nothing ran on its account
  };
  const off = g.onNotification((n) => {
    if (n.method !== 'session.event') return;
    const params = n.params as { session_id: string; event: PromptLike };
    void approve(params.session_id, params.event);
  });
  try {
    const attached = new Set<string>();
    while (!stop.aborted && !g.closed) {
      for (const [requestId, s] of ledger.sessions) {
        if (ledger.tampered.has(requestId) || attached.has(s.session_id)) continue;
        const snap = await g
          .call<{ prompts: PromptLike[] }>('session.resume', { session_id: s.session_id })
          .catch(() => null);
        if (snap === null) continue;
        attached.add(s.session_id);
        for (const p of snap.prompts) await approve(s.session_id, p);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    off();
  }
}

interface Tracked {
  admission_id: string;
  generation: number;
}

/** The detail of an admission `prompt.resolve_unknown` settled (src/domain/local/inputs.ts). */
const RESOLVED_BY = 'resolved by ';

/**
 * After a start: drops the tracked admissions recovery resumed (or that settled), keeps the
 * unknown ones with their current generation, and records why each became unknown.
 *
 * A tracked admission found already resolved is the harness's own `prompt.resolve_unknown` whose
 * answer a kill cut off (nobody else resolves): it stays tracked, so the call is made again, as a
 * client retries every unacknowledged call, and its repeat answers `resolved` (a duplicate). Dropped,
 * the resolution was never counted, and the checks found an admission interrupted that the harness
 * had "not resolved".
 */
export async function refreshUnknowns<T extends Tracked>(
  store: StoreEvidence,
  tracked: Map<string, T>,
  reasons: Map<string, string>,
): Promise<void> {
  for (const [id, u] of [...tracked]) {
    const row = await store.status(id);
    if (row?.state === 'interrupted' && row.detail?.startsWith(RESOLVED_BY)) continue;
    if (row?.state !== 'unknown') {
      tracked.delete(id);
      continue;
    }
    u.generation = row.generation;
    if (!reasons.has(id)) reasons.set(id, row.detail ?? '');
  }
}
