/**
 * Managing local sessions (issue 31): fork, archive and delete.
 *
 * - **Fork** (`session.fork`): a new local session — a new logical id, owned by the caller, with the
 *   source's frozen launch policy — whose first transcript is a copy of the source's current one up
 *   to and including one message. The source is only read: a fork needs no turn slot and never
 *   waits. Its link to the source is recorded on the fork's logical row (`forked_from`), never as a
 *   transcript parent: LIN-3 reads a second child of a transcript as a planted fork.
 *   The fork point must be a message of a settled turn: a message of the running turn, or of one
 *   left `unknown` by a crash, is refused with `fork_point_unsettled` (what that turn did is not
 *   known yet); any earlier message may be forked while the turn runs.
 *   A fork never ends between a tool call and its results: a cut at an assistant message that
 *   called tools (or at one of its results) takes the results stored for that message along.
 * - **Archive** (`session.archive`): a mark on the logical row. Archived sessions are left out of the
 *   default lists; they stay searchable, resumable and usable, and `archived: true` lists them.
 * - **Delete** (`session.delete`): in the session's turn slot (never beside its running turn; a
 *   running turn is refused with `session_busy`, interrupt it first), one store transaction removes
 *   the session and everything stored for it (LocalSessionStore.deleteLocalSession). Viewers get
 *   `session.deleted`; the agent cache drops its copy.
 */
import type { McpServersConfig } from '../../runtime/mcp/config.js';
import { createHash, randomBytes } from 'node:crypto';
import type { LocalSessionRow, LocalSessionStore } from '../ports/local-store.js';
import type { SessionStore, StoredMessage } from '../ports/session-store.js';
import type { Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import type { TypedEmitter } from '../events/typed-emitter.js';
import { newSessionId } from '../session/lifecycle.js';
import { SessionSource } from '../session/source.js';
import type { TranscriptMessage } from '../vocabulary.js';
import { mayAccess, ownerOf, type AccessRow } from './access.js';
import type { LocalEvents } from './events.js';
import type { PublicEvent } from './hub.js';
import { refusePaused } from './inputs.js';
import { RECEIPT_KIND, type CreationReceipt } from './receipt.js';
import { elsewhereBusy, type TurnScheduler } from './scheduler.js';
import { TITLE_MAX } from './titles.js';

export interface ManageContext {
  store: LocalSessionStore;
  sessions: SessionStore;
  scheduler: TurnScheduler;
  events: TypedEmitter<LocalEvents>;
  access(principal: Principal, logicalId: string): Promise<AccessRow>;
  receipt(logicalId: string): CreationReceipt | undefined;
  admitReceipt(receipt: CreationReceipt): void;
  /** The source's in-memory api_key (LOC-5), which its fork needs to reach the same endpoint. */
  apiKey(logicalId: string): string | undefined;
  setApiKey(logicalId: string, key: string): void;
  /** A fork takes over the held values of its source's own MCP servers (mcp-values.ts); past a limit it throws. */
  copyMcpValues(from: string, to: string, servers: McpServersConfig): void;
  /** Lets go of the values copied for a fork that did not come about. */
  forgetMcpValues(logicalId: string): void;
  publish(logicalId: string, event: PublicEvent): void;
  /** Keeps the epoch's cached access facts in step with a changed row. */
  changed(logicalId: string): void;
  /** Drops whatever this daemon keeps in memory of a deleted session. */
  forget(logicalId: string): void;
  assertAccepting(): void;
  now(): Date;
}

export interface ForkParams {
  session_id: string;
  message_id?: number | undefined;
  title?: string | undefined;
  request_id?: string | undefined;
}

/**
 * The messages a fork at `messageId` copies: every message up to it, and the stored results of the
 * tool calls that are still open there. Null when no message has that id. Pure.
 */
export function forkPrefix(messages: readonly StoredMessage[], messageId: number): StoredMessage[] | null {
  const index = messages.findIndex((m) => m.id === messageId);
  if (index < 0) return null;
  let end = index + 1;
  const open = new Set<string>();
  for (const m of messages.slice(0, end)) {
    for (const call of m.tool_calls ?? []) open.add(call.id);
    if (m.role === 'tool' && m.tool_call_id) open.delete(m.tool_call_id);
  }
  while (open.size > 0 && end < messages.length) {
    const next = messages[end]!;
    if (next.role !== 'tool' || !next.tool_call_id || !open.has(next.tool_call_id)) break;
    open.delete(next.tool_call_id);
    end++;
  }
  return messages.slice(0, end);
}

/** A copied message: the same content and time, without the source's admission (not the fork's). */
function copied(m: StoredMessage): TranscriptMessage {
  const { id: _id, session_id: _session, admission_id: _admission, ...rest } = m;
  return rest;
}

function forkTitle(source: AccessRow, explicit: string | undefined): string {
  if (explicit !== undefined) return explicit;
  const base = source.title ?? source.logical_id;
  const suffix = ' (fork)';
  return base.length + suffix.length <= TITLE_MAX
    ? base + suffix
    : `${base.slice(0, TITLE_MAX - suffix.length - 1)}…${suffix}`;
}

export class SessionManagement {
  constructor(private readonly ctx: ManageContext) {}

  async fork(principal: Principal, params: ForkParams): Promise<LocalSessionRow> {
    this.ctx.assertAccepting();
    const source = await this.ctx.access(principal, params.session_id);
    refusePaused(source);
    const receipt = this.ctx.receipt(source.logical_id);
    if (!receipt) throw new Error(`session ${source.logical_id} has no validated receipt`);
    const owner = ownerOf(principal);
    const digest = createHash('sha256')
      .update(JSON.stringify(['fork', source.logical_id, params.message_id ?? null, params.title ?? null]))
      .digest('hex');
    if (params.request_id !== undefined) {
      const existing = await this.ctx.store.findByRequest(owner, principal.profile, params.request_id);
      if (existing) return this.repeated(existing, digest, params.request_id);
    }
    const messages = await this.ctx.sessions.loadTranscript(receipt.current_session_id);
    const messageId = params.message_id ?? messages.at(-1)?.id;
    if (messageId === undefined) {
      throw new GatewayError('invalid_params', `session ${source.logical_id} has no messages to fork`, {
        session_id: source.logical_id,
      });
    }
    const prefix = forkPrefix(messages, messageId);
    if (prefix === null) {
      throw new GatewayError(
        'invalid_params',
        `session ${source.logical_id} shows no message ${messageId} (ids are those of session.resume and session.messages)`,
        { field: 'message_id', session_id: source.logical_id, message_id: messageId },
      );
    }
    await this.refuseUnsettled(source.logical_id, prefix, messageId);

    const now = this.ctx.now();
    const logicalId = newSessionId(now, randomBytes(4).toString('hex'));
    const title = forkTitle(source, params.title);
    const forkReceipt: CreationReceipt = {
      kind: RECEIPT_KIND,
      logical_id: logicalId,
      current_session_id: logicalId,
      owner,
      profile: principal.profile,
      request_id: params.request_id ?? null,
      creation_digest: digest,
      policy: { ...receipt.policy, title },
      lineage: [],
      ...(receipt.model_changes ? { model_changes: receipt.model_changes } : {}),
      created_at: now.toISOString(),
    };
    // Copied before the commit, so values past a limit (mcp-values.ts) refuse the fork before
    // anything is written; let go again when no session of this id comes of it.
    this.ctx.copyMcpValues(source.logical_id, logicalId, receipt.policy.mcp_servers?.own ?? {});
    let result: Awaited<ReturnType<LocalSessionStore['commitCreation']>>;
    try {
      result = await this.ctx.store.commitCreation({
        receipt: forkReceipt,
        origin: new SessionSource({ platform: 'local', chat_id: logicalId, chat_name: title }).toJSON(),
        title,
        hidden: receipt.policy.hidden,
        fork: { session_id: source.logical_id, message_id: messageId, messages: prefix.map(copied) },
      });
    } catch (error) {
      this.ctx.forgetMcpValues(logicalId);
      throw error;
    }
    if (result.kind === 'existing') {
      this.ctx.forgetMcpValues(logicalId);
      return this.repeated(result.session, digest, params.request_id ?? '');
    }
    this.ctx.admitReceipt(forkReceipt);
    const key = this.ctx.apiKey(source.logical_id);
    if (key !== undefined && receipt.policy.requires_api_key) this.ctx.setApiKey(logicalId, key);
    this.ctx.events.emit('session:created', { logical_id: logicalId, request_id: forkReceipt.request_id });
    return result.session;
  }

  /** The fork point may not be a message of a turn still running or left `unknown`. */
  private async refuseUnsettled(
    logicalId: string,
    prefix: StoredMessage[],
    messageId: number,
  ): Promise<void> {
    const unsettled = new Set(
      (await this.ctx.store.unsettled(logicalId))
        .filter((a) => a.state === 'running' || a.state === 'unknown')
        .map((a) => a.admission_id),
    );
    const open = prefix.find((m) => m.admission_id !== undefined && unsettled.has(m.admission_id));
    if (open) {
      throw new GatewayError(
        'fork_point_unsettled',
        `message ${messageId} belongs to a turn of session ${logicalId} that has not settled; fork from an earlier message, or wait until the turn settles (resolve it if it is unknown)`,
        { session_id: logicalId, message_id: messageId, admission_id: open.admission_id },
      );
    }
  }

  private repeated(existing: LocalSessionRow, digest: string, requestId: string): LocalSessionRow {
    const receipt = this.ctx.receipt(existing.logical_id);
    if (!receipt || receipt.creation_digest !== digest) {
      throw new GatewayError(
        'invalid_params',
        `request_id ${JSON.stringify(requestId)} was already used with different fields`,
        { request_id: requestId, session_id: existing.logical_id },
      );
    }
    return existing;
  }

  async archive(
    principal: Principal,
    params: { session_id: string; archived: boolean },
  ): Promise<Record<string, unknown>> {
    const session = await this.ctx.access(principal, params.session_id);
    const at = params.archived ? (session.archived_at ?? this.ctx.now().toISOString()) : null;
    await this.ctx.store.setArchived(session.logical_id, at);
    this.ctx.changed(session.logical_id);
    return { session_id: session.logical_id, archived: params.archived, archived_at: at };
  }

  async delete(principal: Principal, params: { session_id: string }): Promise<Record<string, unknown>> {
    const session = await this.ctx.access(principal, params.session_id);
    const id = session.logical_id;
    const ran = await this.ctx.scheduler.control(id, () => this.ctx.store.deleteLocalSession(id));
    if (ran.kind === 'elsewhere') throw elsewhereBusy(id);
    const result = ran.kind === 'done' ? ran.value : null;
    if (result === null || result.kind === 'running') {
      throw new GatewayError(
        'session_busy',
        `a turn of session ${id} is running: interrupt it (or wait until it settles), then delete the session`,
        { session_id: id, running: this.ctx.scheduler.running(id) },
      );
    }
    if (result.kind === 'missing') {
      throw new GatewayError('not_found', `no session ${id} that you may access`, { session_id: id });
    }
    this.ctx.publish(id, { type: 'session.deleted' });
    this.ctx.forget(id);
    this.ctx.events.emit('session:deleted', { logical_id: id });
    return { session_id: id, deleted: true, transcripts: result.transcripts, messages: result.messages };
  }

  /** How the session came to be and what branched off it: its fork source and its forks. */
  async lineage(principal: Principal, logicalId: string): Promise<Record<string, unknown>> {
    const session = await this.ctx.access(principal, logicalId);
    const from = session.forked_from;
    // Only sessions the caller may open are named: a foreign caller learns nothing about others.
    const found = from ? await this.ctx.store.getLocalSession(from.session_id) : null;
    const source = found && mayAccess(principal, found) ? found : null;
    const forks = (await this.ctx.store.forksOf(logicalId)).filter((row) => mayAccess(principal, row));
    const named = (row: LocalSessionRow) => ({
      session_id: row.logical_id,
      title: row.title,
      created_at: row.created_at,
    });
    const steps = (this.ctx.receipt(logicalId)?.lineage ?? []).map((step) => ({
      kind: step.kind,
      at: step.at,
      ...(step.method ? { method: step.method } : {}),
    }));
    return {
      session_id: logicalId,
      archived_at: session.archived_at,
      steps,
      forked_from: from ? { ...from, title: source?.title ?? null, exists: source !== null } : null,
      forks: forks.map(named),
    };
  }
}
