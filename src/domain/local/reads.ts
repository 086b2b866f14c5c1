/**
 * What the RPC API reads of local sessions, beside their live state: session.list (every scope),
 * session.messages, session.search, session.history, session.context and session.turns. Each read
 * passes the service's access fence first; none changes anything. The service (service.ts) builds
 * it; the methods reach it as `sessions.reads`.
 */
import type { Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import type { LocalSessionStore } from '../ports/local-store.js';
import type { SessionStore } from '../ports/session-store.js';
import type { LocalCompressionDeps } from './compression.js';
import type { AccessRow } from './access.js';
import { contextMeter, type SessionContextView } from './context-meter.js';
import { turnTimeline } from './flight-recorder.js';
import { sessionHistory } from './history.js';
import type { ReplyOptions } from './whole-transcript.js';
import { listAll, listLocal, listStored, sessionMessages, type ListingFacts } from './listing.js';
import type { CreationReceipt } from './receipt.js';
import { searchVisible } from './search.js';
import { systemPromptFor, type PlatformFacts } from './turn-job.js';
import type { LaunchPolicy } from './launch-policy.js';
import type { ToolDefinition } from '../../runtime/types.js';

/**
 * What a session's next request holds besides its transcript, for session.context: the tool
 * definitions of its toolsets and the platforms its system prompt names.
 */
export interface RequestShape {
  tools(policy: LaunchPolicy): readonly ToolDefinition[];
  platforms?(): PlatformFacts;
}

export interface ReadsDeps {
  store: LocalSessionStore;
  sessions: SessionStore;
  /** The session if the principal may use it, its receipt validated (the service's access fence). */
  access(principal: Principal, logicalId: string): Promise<AccessRow>;
  /** The receipt validated in this epoch, if it was. */
  receipt(logicalId: string): CreationReceipt | undefined;
  /** The receipt, validated now if it was not yet; null when it is invalid. */
  ensuredReceipt(logicalId: string): Promise<CreationReceipt | null>;
  /** Sessions shared with the principal (access-cache.ts). */
  sharedWith(principal: Principal): Promise<ReadonlySet<string>>;
  /** Compression's context settings; absent: session.context is refused. */
  compression?: Pick<LocalCompressionDeps, 'settings'> | undefined;
  /** Absent: no tools, only `local`. */
  requestShape?: RequestShape | undefined;
  /** What the listings need of the live sessions (listing.ts). */
  listing: ListingFacts;
}

export class SessionReads {
  constructor(private readonly deps: ReadsDeps) {}

  /** session.list with scope "live" (listing.ts). */
  list(principal: Principal, options: { limit: number; archived: boolean }) {
    return listLocal(this.deps.listing, principal, options);
  }

  /** session.list with scope "stored": a page of the stored sessions the caller may access. */
  listStored(principal: Principal, options: { limit: number; cursor: string | null; archived: boolean }) {
    return listStored(this.deps.listing, principal, options);
  }

  /** session.list with scope "all": local and chat-platform sessions by recent activity. */
  listAll(principal: Principal, options: { limit: number; cursor: string | null; archived: boolean }) {
    return listAll(this.deps.listing, principal, options);
  }

  /** session.messages: one page of a transcript, newest page first (listing.ts). */
  messages(principal: Principal, options: { session_id: string; before_id: number | null; limit: number }) {
    return sessionMessages(this.deps.listing, principal, options);
  }

  /** session.search: full-text search over the sessions the caller may open (search.ts). */
  async search(principal: Principal, options: { query: string; limit: number; syntax: 'plain' | 'fts' }) {
    const shared = await this.deps.sharedWith(principal);
    return searchVisible(this.deps.sessions, this.deps.store, principal, options, shared);
  }

  /** session.history: the whole lineage, or what the model sees (history.ts). */
  async history(
    principal: Principal,
    logicalId: string,
    view: 'full' | 'model',
    options: ReplyOptions = {},
  ): Promise<Record<string, unknown>> {
    await this.deps.access(principal, logicalId);
    return sessionHistory(this.deps.sessions, this.validReceipt(logicalId), view, options);
  }

  /** session.context (context-meter.ts): how full the next request is, and when compression is due. */
  async context(principal: Principal, logicalId: string): Promise<SessionContextView> {
    await this.deps.access(principal, logicalId);
    const receipt = await this.deps.ensuredReceipt(logicalId);
    if (!receipt) throw paused(logicalId);
    const settings = this.deps.compression?.settings(receipt.policy);
    if (!settings) throw new GatewayError('invalid_params', 'this gateway keeps no context budget');
    const shape = this.deps.requestShape;
    return contextMeter({
      sessionId: logicalId,
      settings,
      systemPrompt: systemPromptFor(receipt, shape?.platforms?.()),
      transcript: await this.deps.sessions.loadTranscript(receipt.current_session_id),
      tools: shape?.tools(receipt.policy) ?? [],
    });
  }

  /** session.turns (flight-recorder.ts): the newest turns, each as a timeline of stored records. */
  async turns(principal: Principal, logicalId: string, limit: number): Promise<Record<string, unknown>> {
    await this.deps.access(principal, logicalId);
    const receipt = this.deps.receipt(logicalId);
    const records = await this.deps.store.recentTurns(logicalId, limit);
    const page = receipt
      ? await this.deps.sessions.loadTranscriptPage(receipt.current_session_id, { limit: 1000 })
      : { messages: [] };
    const turns = records.map((r) => turnTimeline(r, page.messages, receipt?.lineage ?? []));
    return { session_id: logicalId, turns };
  }

  private validReceipt(logicalId: string): CreationReceipt {
    const receipt = this.deps.receipt(logicalId);
    if (!receipt) throw paused(logicalId);
    return receipt;
  }
}

function paused(logicalId: string): GatewayError {
  return new GatewayError('permission_denied', `session ${logicalId} is paused: its receipt is invalid`);
}
