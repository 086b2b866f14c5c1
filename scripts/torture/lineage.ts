/**
 * The lineage invariant of a torture run (LIN-1..3): a logical session's history is always
 * exactly its parent's or its child's, never lost, never doubled. Checked on the final database:
 *
 * - every untampered session's lineage validates against the store (no fork, no broken step);
 * - each compression child is its parent compressed: the parent's head, then one summary, then
 *   copies of the parent's messages (a tool output possibly cut to a stub) in the parent's order,
 *   then what came after the compression;
 * - in the history across the lineage (session.history's join: a compression's copies counted
 *   once), every admission that started has its input exactly once, and no message appears twice;
 * - a turn's messages never straddle a reset (a reset never splits a turn).
 */
import Database from 'better-sqlite3';
import type { TranscriptMessage } from '../../src/domain/vocabulary.js';
import { fullHistory } from '../../src/domain/local/history.js';
import type { LineageStep } from '../../src/domain/local/receipt.js';
import { isSummaryMessage } from '../../src/runtime/context/compress.js';
import { checkLineage, lineageChain, type LineageFacts } from '../../src/domain/local/lineage.js';
import { checkReceipt, localSessionKey, receiptKey } from '../../src/domain/local/receipt.js';

export function checkLineages(
  file: string,
  untampered: readonly string[],
  acknowledgedResets: ReadonlyMap<string, number>,
): { resets: number; compressions: number; violations: string[] } {
  const db = new Database(file, { readonly: true });
  const violations: string[] = [];
  let resets = 0;
  let compressions = 0;
  try {
    const receiptOf = db.prepare('SELECT body FROM private_receipts WHERE key = ?');
    const routeOf = db.prepare('SELECT session_id FROM routes WHERE session_key = ?');
    const rowOf = db.prepare(
      `SELECT session_id, session_key, closed_at, closed_reason, parent_session_id, lineage_kind
         FROM sessions WHERE session_id = ?`,
    );
    const childrenOf = db.prepare('SELECT session_id FROM sessions WHERE parent_session_id = ?');
    const messagesOf = db.prepare(
      `SELECT role, content, extra_json FROM messages WHERE session_id = ? AND removed_at IS NULL ORDER BY id`,
    );
    const loadMessages = (sid: string): TranscriptMessage[] =>
      (messagesOf.all(sid) as { role: string; content: string | null; extra_json: string | null }[]).map(
        (m) =>
          ({
            role: m.role,
            content: m.content,
            ...(JSON.parse(m.extra_json ?? '{}') as object),
          }) as TranscriptMessage,
      );
    const startedOf = db.prepare<[string], { admission_id: string }>(
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
      compressions += check.receipt.lineage.filter((s) => s.kind === 'compression').length;
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

      violations.push(...checkHistory(id, check.receipt.lineage, chain.map(loadMessages), startedOf.all(id)));
    }
  } finally {
    db.close();
  }
  return { resets, compressions, violations };
}

/** The checks on one session's messages: its transcripts in chain order, its started admissions. */
function checkHistory(
  id: string,
  lineage: readonly LineageStep[],
  transcripts: TranscriptMessage[][],
  started: { admission_id: string }[],
): string[] {
  const violations: string[] = [];
  lineage.forEach((step, i) => {
    if (step.kind !== 'compression') return;
    const why = notACompressionOf(transcripts[i]!, transcripts[i + 1]!);
    if (why) violations.push(`session ${id}: compression ${step.from} -> ${step.to}: ${why}`);
  });
  const history = fullHistory(lineage, transcripts).messages;
  const inputs = new Map<string, number>();
  const seen = new Set<string>();
  for (const m of history) {
    const key = JSON.stringify([m.role, m.content, m.admission_id ?? null, m.tool_call_id ?? null]);
    if (seen.has(key) && !isSummaryMessage(m))
      violations.push(`session ${id}: ${m.role} message of ${m.admission_id ?? '-'} twice in its history`);
    seen.add(key);
    if (m.role === 'user' && m.admission_id !== undefined)
      inputs.set(m.admission_id, (inputs.get(m.admission_id) ?? 0) + 1);
  }
  for (const { admission_id } of started) {
    const n = inputs.get(admission_id) ?? 0;
    if (n !== 1)
      violations.push(`session ${id}: started admission ${admission_id} has ${n} inputs in its history`);
  }
  // Reset segments: transcripts joined by compressions belong to one segment.
  const segmentOf = new Map<string, number>();
  let segment = 0;
  transcripts.forEach((messages, i) => {
    if (i > 0 && lineage[i - 1]!.kind === 'reset') segment++;
    for (const m of messages) {
      if (m.admission_id === undefined) continue;
      const known = segmentOf.get(m.admission_id);
      if (known !== undefined && known !== segment)
        violations.push(`session ${id}: turn ${m.admission_id} is split across a reset`);
      segmentOf.set(m.admission_id, segment);
    }
  });
  return violations;
}

/** Why `child` is not `parent` compressed (head, one summary, then copies in order), or null. */
function notACompressionOf(parent: TranscriptMessage[], child: TranscriptMessage[]): string | null {
  const summary = child.findIndex(isSummaryMessage);
  if (summary < 0) return 'the child has no summary';
  if (child.filter(isSummaryMessage).length !== 1) return 'the child has more than one summary';
  const key = (m: TranscriptMessage): string =>
    JSON.stringify([
      m.role,
      m.role === 'tool' ? null : m.content,
      m.admission_id ?? null,
      m.tool_call_id ?? null,
      (m.tool_calls ?? []).map((c) => c.id),
    ]);
  for (let i = 0; i < summary; i++)
    if (parent[i] === undefined || key(parent[i]!) !== key(child[i]!))
      return `head message ${i} is not the parent's`;
  // After the summary: copies of parent messages first (indices into the parent), then new ones.
  const indexOf = new Map(parent.map((m, j) => [key(m), j]));
  const copied: number[] = [];
  for (const m of child.slice(summary + 1)) {
    const j = indexOf.get(key(m));
    if (j === undefined || j < summary) break;
    copied.push(j);
  }
  if (copied.length === 0) return parent.length > summary ? "nothing of the parent's tail was kept" : null;
  // The turn's question may stand before the loop's recent steps (a compression inside a tool loop).
  const question = parent[copied[0]!]!.role === 'user' && copied.length > 1 && copied[1] !== copied[0]! + 1;
  const tail = question ? copied.slice(1) : copied;
  const expected = Array.from({ length: parent.length - tail[0]! }, (_, k) => tail[0]! + k);
  if (JSON.stringify(tail) !== JSON.stringify(expected))
    return `the copied tail is not the end of the parent in order (${tail.join(',')})`;
  return null;
}
