/**
 * The lineage invariant of a torture run (LIN-2, LIN-3): a logical session's history is always
 * exactly its parent's or its child's, never lost, never doubled. Checked on the final database:
 *
 * - every untampered session's lineage validates against the store (no fork, no broken step);
 * - every turn's messages live in ONE transcript of its chain (a reset never splits a turn);
 * - every admission that started has its input in exactly one transcript of the chain (a reset
 *   never loses nor copies a stored message).
 */
import Database from 'better-sqlite3';
import { checkLineage, lineageChain, type LineageFacts } from '../../src/domain/local/lineage.js';
import { checkReceipt, localSessionKey, receiptKey } from '../../src/domain/local/receipt.js';

export function checkLineages(
  file: string,
  untampered: readonly string[],
  acknowledgedResets: ReadonlyMap<string, number>,
): { resets: number; violations: string[] } {
  const db = new Database(file, { readonly: true });
  const violations: string[] = [];
  let resets = 0;
  try {
    const receiptOf = db.prepare('SELECT body FROM private_receipts WHERE key = ?');
    const routeOf = db.prepare('SELECT session_id FROM routes WHERE session_key = ?');
    const rowOf = db.prepare(
      `SELECT session_id, session_key, closed_at, closed_reason, parent_session_id, lineage_kind
         FROM sessions WHERE session_id = ?`,
    );
    const childrenOf = db.prepare('SELECT session_id FROM sessions WHERE parent_session_id = ?');
    const messagesOf = db.prepare(
      `SELECT session_id, role, extra_json FROM messages WHERE session_id = ? AND removed_at IS NULL`,
    );
    const startedOf = db.prepare(
      `SELECT admission_id FROM admissions WHERE logical_id = ? AND started_at IS NOT NULL`,
    );
    for (const id of untampered) {
      const raw = (receiptOf.get(receiptKey(id)) as { body: string } | undefined)?.body ?? null;
      const routed =
        (routeOf.get(localSessionKey(id)) as { session_id: string } | undefined)?.session_id ?? null;
      const check = checkReceipt({ logicalId: id, raw, routedSessionId: routed }, 'default');
      if (!check.ok) {
        violations.push(`session ${id}: receipt ${check.failure} (${check.detail})`);
        continue;
      }
      const chain = lineageChain(check.receipt);
      const stepped = check.receipt.lineage.filter((s) => s.kind === 'reset').length;
      resets += stepped;
      if (stepped !== (acknowledgedResets.get(id) ?? 0))
        violations.push(
          `session ${id}: ${acknowledgedResets.get(id) ?? 0} resets acknowledged, ${stepped} in its lineage`,
        );
      const facts = new Map<string, LineageFacts | null>(
        chain.map((sid) => {
          const row = rowOf.get(sid) as Omit<LineageFacts, 'children'> | undefined;
          const children = (childrenOf.all(sid) as { session_id: string }[]).map((c) => c.session_id);
          return [sid, row ? { ...row, children } : null];
        }),
      );
      const lineage = checkLineage(check.receipt, facts, localSessionKey(id));
      if (!lineage.ok) violations.push(`session ${id}: lineage ${lineage.failure} (${lineage.detail})`);

      const transcriptsOf = new Map<string, Set<string>>();
      const inputs = new Map<string, number>();
      for (const sid of chain) {
        for (const m of messagesOf.all(sid) as {
          session_id: string;
          role: string;
          extra_json: string | null;
        }[]) {
          const admission = (JSON.parse(m.extra_json ?? '{}') as { admission_id?: string }).admission_id;
          if (admission === undefined) continue;
          transcriptsOf.set(admission, (transcriptsOf.get(admission) ?? new Set()).add(sid));
          if (m.role === 'user') inputs.set(admission, (inputs.get(admission) ?? 0) + 1);
        }
      }
      for (const [admission, where] of transcriptsOf) {
        if (where.size > 1)
          violations.push(
            `session ${id}: turn ${admission} is split across transcripts ${[...where].join(', ')}`,
          );
      }
      for (const { admission_id } of startedOf.all(id) as { admission_id: string }[]) {
        const n = inputs.get(admission_id) ?? 0;
        if (n !== 1)
          violations.push(`session ${id}: started admission ${admission_id} has ${n} stored inputs`);
      }
    }
  } finally {
    db.close();
  }
  return { resets, violations };
}
