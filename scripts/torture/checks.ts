/**
 * The six invariants of a torture run (issue 5), checked after the final drain against what the
 * clients were acknowledged (the ledger), the database, every request the demo model received, and
 * every tool execution (ran.log lines).
 */
import type { RecordedRequest } from '../../src/runtime/demo/server.js';
import { SUMMARY_MARKER } from '../../src/runtime/context/compress.js';
import { ADMISSION_HEADER } from '../../src/runtime/runner.js';
import type { Ledger } from './client.js';

export interface AdmissionFact {
  admission_id: string;
  logical_id: string;
  submission_id: string;
  seq: number;
  state: string;
  started_at: string | null;
  settled_at: string | null;
  detail: string | null;
  /** How many times recovery resumed the turn (REC-7): each resume may repeat one model call. */
  resumes: number;
  text: string;
}

export interface SnapshotMessage {
  role: string;
  content: string | null;
  admission_id?: string;
  tool_calls?: { id: string }[];
  tool_call_id?: string;
}

export interface Evidence {
  ledger: Ledger;
  admissions: AdmissionFact[];
  /** Sessions per request_id as the database holds them. */
  sessionsPerRequest: Map<string, number>;
  requests: readonly RecordedRequest[];
  /** ran.log lines (submission ids), over every session's cwd. */
  ran: string[];
  /** Final transcripts of untampered sessions, by logical id. */
  transcripts: Map<string, SnapshotMessage[]>;
  /** Admissions the harness resolved as `unknown`. */
  resolved: Set<string>;
  /** Admissions that were queued in a session when its receipt was tampered with. */
  queuedWhenTampered: Set<string>;
  /** Why each resolved admission had become `unknown` (its detail before it was resolved). */
  unknownReasons: Map<string, string>;
  /** submission id → when the harness first approved its command (ms since the epoch). */
  approvals: Map<string, number>;
  /** `recovery.max_resumes` of the run (1: no step resume; every started turn is unknown). */
  maxResumes: number;
}

export interface Tally {
  admissions: number;
  completed: number;
  failed: number;
  unknown: number;
  /** Unknown admissions by the reason recovery gave (tool_running, max_resumes). */
  unknown_reasons: Record<string, number>;
  /** Approved commands that ran (once each, after their approval). */
  approved_runs: number;
  paused: number;
  lost: number;
  duplicated: number;
}

type Message = { role?: unknown; tool_calls?: { id?: unknown }[]; tool_call_id?: unknown };

/** Model requests that open a turn (the last message is the user's input), by admission. */
export function turnStarts(requests: readonly RecordedRequest[]): Map<string, number> {
  const starts = new Map<string, number>();
  for (const r of requests) {
    const admission = r.headers[ADMISSION_HEADER];
    const messages = (r.body?.messages ?? []) as Message[];
    if (typeof admission !== 'string' || messages[messages.length - 1]?.role !== 'user') continue;
    starts.set(admission, (starts.get(admission) ?? 0) + 1);
  }
  return starts;
}

/** A request the model saw must close every tool call with exactly one result, and hold no orphan result. */
function danglingInRequest(r: RecordedRequest): string | null {
  const messages = (r.body?.messages ?? []) as Message[];
  const results = new Map<string, number>();
  const calls = new Set<string>();
  for (const m of messages) {
    for (const call of m.tool_calls ?? []) calls.add(String(call.id));
    if (m.role === 'tool' && typeof m.tool_call_id === 'string') {
      if (!calls.has(m.tool_call_id)) return `tool result ${m.tool_call_id} answers no earlier call`;
      results.set(m.tool_call_id, (results.get(m.tool_call_id) ?? 0) + 1);
    }
  }
  for (const m of messages) {
    for (const call of m.tool_calls ?? []) {
      const n = results.get(String(call.id)) ?? 0;
      if (n !== 1) return `tool call ${String(call.id)} has ${n} results`;
    }
  }
  return null;
}

export function checkInvariants(e: Evidence): { tally: Tally; violations: string[] } {
  const violations = [...e.ledger.violations];
  const byId = new Map(e.admissions.map((a) => [a.admission_id, a]));
  const tamperedSessions = new Set(
    [...e.ledger.tampered.keys()].map((r) => e.ledger.sessions.get(r)?.session_id).filter(Boolean),
  );
  const starts = turnStarts(e.requests);
  // One marker line per tool execution: `<submission id> [<ms>]`.
  const runs = new Map<string, number>();
  const ranAt = new Map<string, number>();
  for (const line of e.ran) {
    const [id = '', at] = line.split(' ');
    runs.set(id, (runs.get(id) ?? 0) + 1);
    if (at !== undefined) ranAt.set(id, Number(at));
  }
  const tally: Tally = {
    admissions: 0,
    completed: 0,
    failed: 0,
    unknown: 0,
    unknown_reasons: {},
    approved_runs: 0,
    paused: 0,
    lost: 0,
    duplicated: 0,
  };

  // Approved commands: at most once (counted below with every tool) and only after the approval.
  for (const [id, at] of ranAt) {
    const approved = e.approvals.get(id);
    if (approved === undefined) violations.push(`approval-gated command of ${id} ran without an approval`);
    else if (at < approved - 5) violations.push(`approval-gated command of ${id} ran before its approval`);
    else tally.approved_runs++;
  }

  // 1 + 2: every acknowledged admission settled exactly once, or unknown because it had started.
  for (const ack of e.ledger.admissions.values()) {
    tally.admissions++;
    const row = byId.get(ack.admission_id);
    const started = starts.get(ack.admission_id) ?? 0;
    const executed = runs.get(ack.submission_id) ?? 0;
    // A resumed turn may call the model again (REC-7), one more start per resume at most; a tool
    // execution never repeats.
    const maxStarts = 1 + (row?.resumes ?? 0);
    if (started > maxStarts || executed > 1) {
      tally.duplicated++;
      violations.push(
        `admission ${ack.admission_id} (${ack.submission_id}) ran ${started} turns, ${executed} tools`,
      );
    }
    if (!row) {
      tally.lost++;
      violations.push(
        `acknowledged admission ${ack.admission_id} (${ack.submission_id}) is not in the store`,
      );
      continue;
    }
    if (tamperedSessions.has(row.logical_id)) {
      tally.paused++;
      if (
        e.queuedWhenTampered.has(row.admission_id) &&
        (row.state !== 'queued' || started > 0 || executed > 0)
      ) {
        violations.push(
          `admission ${row.admission_id} of a tampered session ran (${row.state}, ${started} turns)`,
        );
      }
      continue;
    }
    switch (row.state) {
      case 'completed':
      case 'failed':
        if (row.state === 'completed') tally.completed++;
        else tally.failed++;
        if (started < 1 || started > maxStarts)
          violations.push(
            // With how it settled (the stored detail), so a run that fails says why the turn ended.
            `admission ${row.admission_id} ${row.state} after ${started} turn starts (${row.resumes} resumes)${row.detail ? `: ${row.detail}` : ''}`,
          );
        if (row.state === 'completed' && ack.tool && executed !== 1)
          violations.push(`admission ${row.admission_id} completed with its tool run ${executed} times`);
        break;
      case 'interrupted': {
        tally.unknown++;
        if (!e.resolved.has(row.admission_id) || row.started_at === null)
          violations.push(
            `admission ${row.admission_id} interrupted without having started and been resolved`,
          );
        // REC-7: unknown only when its tool was running at the kill (or the stuck-loop rule).
        const reason = (e.unknownReasons.get(row.admission_id) ?? '').split(':')[0] || 'none';
        tally.unknown_reasons[reason] = (tally.unknown_reasons[reason] ?? 0) + 1;
        if (reason === 'tool_running' && !row.text.startsWith('run:'))
          violations.push(`admission ${row.admission_id} unknown (tool_running) but it runs no tool`);
        else if (reason !== 'tool_running' && reason !== 'max_resumes' && e.maxResumes !== 1)
          violations.push(`admission ${row.admission_id} unknown for "${reason}": no tool was running`);
        break;
      }
      default:
        tally.lost++;
        violations.push(`admission ${row.admission_id} ended ${row.state}: never completed`);
    }
  }

  // 3: no request_id produced two sessions (the store's side; the wire side is in the ledger).
  for (const [requestId, n] of e.sessionsPerRequest) {
    if (n > 1) violations.push(`request_id ${requestId} has ${n} sessions in the store`);
  }

  // 4: transcripts are well-formed and in FIFO order; what the model saw never had a dangling call.
  for (const r of e.requests) {
    const why = danglingInRequest(r);
    if (why) violations.push(`model request for ${String(r.headers[ADMISSION_HEADER])}: ${why}`);
  }
  for (const [sessionId, messages] of e.transcripts)
    violations.push(...checkTranscript(sessionId, messages, byId, e.resolved));

  // 5: nothing started behind an unknown admission before it was resolved; FIFO by start time.
  const bySession = new Map<string, AdmissionFact[]>();
  for (const a of e.admissions) bySession.set(a.logical_id, [...(bySession.get(a.logical_id) ?? []), a]);
  for (const [sessionId, list] of bySession) {
    list.sort((a, b) => a.seq - b.seq);
    let lastStart = '';
    for (const a of list) {
      if (a.started_at === null) continue;
      if (a.started_at < lastStart)
        violations.push(`session ${sessionId}: admission seq ${a.seq} started out of FIFO order`);
      lastStart = a.started_at;
    }
    for (const u of list.filter((a) => e.resolved.has(a.admission_id) && a.settled_at !== null)) {
      for (const later of list.filter((a) => a.seq > u.seq && a.started_at !== null)) {
        if (later.started_at! < u.settled_at!)
          violations.push(
            `session ${sessionId}: seq ${later.seq} started before unknown seq ${u.seq} was resolved`,
          );
      }
    }
  }
  return { tally, violations };
}

function checkTranscript(
  sessionId: string,
  messages: SnapshotMessage[],
  byId: Map<string, AdmissionFact>,
  resolved: Set<string>,
): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  let lastSeq = 0;
  const results = new Map<string, number>();
  for (const m of messages)
    if (m.role === 'tool' && m.tool_call_id)
      results.set(m.tool_call_id, (results.get(m.tool_call_id) ?? 0) + 1);
  const calls = new Set<string>();
  for (const m of messages) {
    // A compression's summary (session.history marks where one happened) belongs to no admission.
    if (m.role === 'user' && (m.content ?? '').startsWith(SUMMARY_MARKER)) continue;
    const key = JSON.stringify([m.role, m.content, m.admission_id, m.tool_call_id ?? null]);
    if (seen.has(key)) out.push(`session ${sessionId}: duplicated ${m.role} message of ${m.admission_id}`);
    seen.add(key);
    if (m.role === 'user') {
      const seq = byId.get(m.admission_id ?? '')?.seq;
      if (seq === undefined)
        out.push(`session ${sessionId}: user message of unknown admission ${m.admission_id}`);
      else if (seq <= lastSeq)
        out.push(`session ${sessionId}: user messages out of FIFO order at seq ${seq}`);
      else lastSeq = seq;
    }
    for (const call of m.tool_calls ?? []) {
      calls.add(call.id);
      const n = results.get(call.id) ?? 0;
      const open = n === 0 && resolved.has(m.admission_id ?? '');
      if (n !== 1 && !open) out.push(`session ${sessionId}: tool call ${call.id} has ${n} results`);
    }
    if (m.role === 'tool' && !calls.has(m.tool_call_id ?? ''))
      out.push(`session ${sessionId}: tool result ${m.tool_call_id} without a call before it`);
  }
  return out;
}
