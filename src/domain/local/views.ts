/**
 * What clients see of a local session: the info, the resume snapshot, messages without private
 * fields, and the answer to a prompt response. Pure: the service gathers the facts, these shape them.
 * Nothing here may carry a receipt's owner binding, an admission's private binding or an api_key.
 */
import type { AdmissionRow, LocalSessionRow } from '../ports/local-store.js';
import { publicMessage, type StoredMessage } from '../ports/session-store.js';
import { JsonText } from '../json-text.js';
import { GatewayError } from '../errors.js';
import type { AccessRow } from './access.js';
import type { LaunchPolicy } from './launch-policy.js';

export function sessionInfo(
  session: AccessRow,
  policy: LaunchPolicy | undefined,
  agentLive: boolean,
): Record<string, unknown> {
  return {
    session_id: session.logical_id,
    source: session.source,
    platform: policy?.platform ?? null,
    model: policy?.model ?? null,
    provider: policy?.provider ?? null,
    reasoning: policy?.reasoning ?? null,
    editor: policy?.editor ?? null,
    cwd: policy?.cwd ?? null,
    toolsets: policy?.toolsets ?? null,
    // Names only: a server's env and headers may hold secrets.
    mcp_servers: {
      profile: policy?.mcp_servers?.profile ?? [],
      own: Object.keys(policy?.mcp_servers?.own ?? {}),
    },
    safe_mode: policy?.safe_mode ?? false,
    ignore_user_config: policy?.ignore_user_config ?? false,
    // The files its frozen prompt took instructions from (null: not kept for this session).
    instruction_files: policy?.instruction_files ?? null,
    title: session.title,
    hidden: session.hidden,
    profile: session.profile,
    agent: agentLive ? 'live' : 'lazy',
    created_at: session.created_at,
    archived_at: session.archived_at,
    forked_from: session.forked_from,
  };
}

export type SessionState = 'paused' | 'running' | 'unknown' | 'idle';

export function sessionState(
  session: LocalSessionRow,
  running: unknown,
  unsettled: readonly AdmissionRow[],
): SessionState {
  if (session.paused_reason) return 'paused';
  if (running) return 'running';
  return unsettled.some((a) => a.state === 'unknown') ? 'unknown' : 'idle';
}

/** The resume snapshot (LOC-2, LOC-7). */
export function sessionSnapshot(facts: {
  session: LocalSessionRow;
  /** Already serialized (JsonText) when the reply is written by the RPC surface. */
  messages: readonly StoredMessage[] | JsonText;
  unsettled: readonly AdmissionRow[];
  running: { admission_id: string; generation: number } | null;
  prompts: unknown[];
  epoch: number;
  lastSeq: number;
  info: Record<string, unknown>;
}): Record<string, unknown> {
  const { session, messages, unsettled } = facts;
  return {
    session_id: session.logical_id,
    stored_session_id: session.logical_id,
    messages: messages instanceof JsonText ? messages : messages.map(publicMessage),
    message_count: messages.length,
    state: sessionState(session, facts.running, unsettled),
    paused_reason: session.paused_reason,
    running: facts.running,
    pending_admissions: unsettled.map((a) => ({
      admission_id: a.admission_id,
      submission_id: a.submission_id,
      state: a.state,
      seq: a.seq,
      text: a.text,
      execution_generation: a.generation,
      // Why an `unknown` admission was not resumed (tool_running, max_resumes, stale: REC-7).
      detail: a.detail,
      resumes: a.resumes,
      // A steer not yet applied (issue 28): it goes into the running turn at its next boundary.
      ...(a.mode === 'steer' ? { mode: a.mode } : {}),
    })),
    prompts: facts.prompts,
    execution_generation: session.generation,
    epoch: facts.epoch,
    last_seq: facts.lastSeq,
    info: facts.info,
  };
}

/** Maps the prompt broker's verdict on an answer (LOC-9) to a result or a wire-mappable refusal. */
export function promptAnswerResult(
  status: string,
  params: { session_id: string; prompt_id: string; execution_generation: number },
): Record<string, unknown> {
  switch (status) {
    case 'resolved':
    case 'already_resolved':
      return { status, prompt_id: params.prompt_id };
    case 'stale_generation':
      throw new GatewayError(
        'stale_generation',
        `prompt ${params.prompt_id} is not of generation ${params.execution_generation}`,
      );
    case 'invalid_choice':
      throw new GatewayError('invalid_params', `that answer is not one of the prompt's choices`, {
        prompt_id: params.prompt_id,
      });
    default:
      throw new GatewayError(
        'not_found',
        `no open prompt ${params.prompt_id} in session ${params.session_id}`,
      );
  }
}
