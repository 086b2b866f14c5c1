/**
 * The open approvals and questions of chat-platform turns, for the gateway's operators on any
 * client (the dashboard). A platform turn asks through the messaging gateway's own prompt broker;
 * once that gateway runs it registers the broker here. An operator may read a platform session's
 * open prompts and answer one by its exact id, as the chat's /approve would; nobody else learns
 * that the session exists (`not_found`, as for every session one may not see).
 */
import type {
  ApprovalResponse,
  ClarifyResponse,
  PendingPrompt,
  PromptBroker,
} from '../../runtime/approvals/broker.js';
import type { SessionStore } from '../ports/session-store.js';
import { answerer, isOperator, type Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import { isLocalSessionKey } from './receipt.js';
import { promptAnswerResult } from './views.js';

export class PlatformPrompts {
  private broker: PromptBroker | null = null;

  constructor(private readonly sessions: SessionStore) {}

  /** The messaging gateway's broker, while it runs (null when it stops). */
  attach(broker: PromptBroker | null): void {
    this.broker = broker;
  }

  /** True when `sessionId` is a chat-platform session the principal may see. */
  async visible(principal: Principal, sessionId: string): Promise<boolean> {
    if (!isOperator(principal)) return false;
    const entry = await this.sessions.lookupBySessionId(sessionId);
    return entry !== null && !isLocalSessionKey(entry.session_key);
  }

  /** The session's open prompts (none when no messaging gateway runs). */
  pending(sessionId: string): PendingPrompt[] {
    return this.broker?.pendingPrompts(sessionId) ?? [];
  }

  async respondApproval(principal: Principal, params: ApprovalResponse) {
    const broker = await this.open(principal, params.session_id);
    return promptAnswerResult(
      broker.respondApproval({ ...params, answered_by: answerer(principal) }).status,
      params,
    );
  }

  async respondClarify(principal: Principal, params: ClarifyResponse) {
    const broker = await this.open(principal, params.session_id);
    return promptAnswerResult(
      broker.respondClarify({ ...params, answered_by: answerer(principal) }).status,
      params,
    );
  }

  private async open(principal: Principal, sessionId: string): Promise<PromptBroker> {
    if (!(await this.visible(principal, sessionId)) || this.broker === null) {
      throw new GatewayError('not_found', `no session ${sessionId} that you may access`, {
        session_id: sessionId,
      });
    }
    return this.broker;
  }
}
