/**
 * `gatehouse acp`: an Agent Client Protocol agent on stdio (the official `@agentclientprotocol/sdk`)
 * that is one more viewer of the gateway (docs/integrations.md, "ACP: editors drive a session").
 * Each ACP request becomes the gateway's own RPCs on a link made as the chat makes it (the daemon
 * started when none runs, a fresh interactive ticket): session/new → session.create (source acp,
 * the editor's name as `editor`), session/load → session.resume with the history replayed and
 * session.mcp.supply with the editor's MCP servers (their env and header values live only in the
 * gateway's memory, so they are given again after it restarted: also by this bridge itself on a
 * new link), session/prompt → prompt.submit with a submission id fixed by the request, approvals →
 * session/request_permission → approval.respond, session/cancel → session.interrupt.
 *
 * The editor going away (stdin closed) ends this process only: the session and a turn it started
 * go on in the daemon. The daemon going away mid-turn fails that prompt with `turn_not_completed`
 * (-32018): after a restart the turn is resumed or `unknown`, never run twice.
 */
import { randomUUID } from 'node:crypto';
import {
  agent,
  methods,
  PROTOCOL_VERSION,
  RequestError,
  type AgentApp,
  type AgentContext,
  type ContentBlock,
  type McpServer,
  type SessionUpdate,
} from '@agentclientprotocol/sdk';
import type { HomeLayout } from '../../daemon/home.js';
import { gatehouseVersion } from '../../daemon/services/describe.js';
import { RPC_REASONS } from '../../protocol/errors.js';
import { ConnectionClosedError, RpcCallError, type Notification } from '../client/rpc-client.js';
import { openLink, type Link } from '../cli/chat/link.js';
import {
  AcpInputError,
  approvalChoice,
  historyUpdates,
  launchMcpServers,
  permissionOptions,
  promptText,
  str,
  toolKind,
  type GatehouseEvent,
  type StoredMessage,
} from './translate.js';
import { PromptTurn } from './turn.js';

interface Snapshot {
  session_id: string;
  messages: StoredMessage[];
  info: { cwd: string | null };
}

/** A session this editor has opened: its live turn, and the approvals it is asking about. */
interface OpenSession {
  id: string;
  /** The link it is attached on (a new link attaches again). */
  link: Link | null;
  turn: PromptTurn | null;
  /** The editor's open permission requests, by prompt id: aborted when answered elsewhere. */
  asking: Map<string, AbortController>;
  /**
   * The editor's MCP servers for it, values included: the gateway holds their env and header values
   * in memory only, so a gateway that restarted under this editor is given them again on the next
   * link (this process's memory is the editor's, never stored).
   */
  servers: Record<string, unknown>;
  /** The link the gateway was last given them on (a new link may be a restarted gateway). */
  serversGivenOn: Link | null;
}

/** The meta key an editor may set to name a prompt's submission itself (exactly-once across restarts). */
export const SUBMISSION_META = 'gatehouse/submission_id';

const TURN_NOT_COMPLETED = RPC_REASONS.turn_not_completed.code;

export class AcpBridge {
  /** This process: a request's submission id is fixed by it and the request's id. */
  private readonly bridgeId = randomUUID();
  private link: Link | null = null;
  private linking: Promise<Link> | null = null;
  /** The editor's name from initialize (`clientInfo`): the session's `editor` label. */
  private editor: string | null = null;
  private readonly sessions = new Map<string, OpenSession>();

  constructor(private readonly layout: HomeLayout) {}

  app(): AgentApp {
    return agent({ name: 'gatehouse' })
      .onRequest(methods.agent.initialize, ({ params }) => {
        const info = params.clientInfo;
        const name = (info?.title ?? info?.name ?? '').trim();
        this.editor = name === '' ? null : name.slice(0, 200);
        return {
          protocolVersion: PROTOCOL_VERSION,
          agentCapabilities: {
            loadSession: true,
            promptCapabilities: { image: false, audio: false, embeddedContext: true },
            mcpCapabilities: { http: true, sse: false },
          },
          agentInfo: { name: 'gatehouse', title: 'Gatehouse', version: gatehouseVersion() },
          authMethods: [],
        };
      })
      .onRequest(methods.agent.session.new, ({ params, requestId }) =>
        this.guard(() => this.newSession(params, String(requestId))),
      )
      .onRequest(methods.agent.session.load, ({ params, client }) =>
        this.guard(() => this.loadSession(params, client)),
      )
      .onRequest(methods.agent.session.prompt, ({ params, requestId, client }) =>
        this.guard(() =>
          this.prompt(params.sessionId, params.prompt, params._meta, String(requestId), client),
        ),
      )
      .onNotification(methods.agent.session.cancel, ({ params }) => this.cancel(params.sessionId));
  }

  /** Detaches from the gateway (the editor left): sessions and their turns go on there. */
  async close(): Promise<void> {
    const link = this.link;
    this.link = null;
    if (!link) return;
    for (const s of this.sessions.values())
      await link.client.call('session.detach', { session_id: s.id }).catch(() => undefined);
    await link.client.close().catch(() => undefined);
  }

  // ---- the requests ------------------------------------------------------------------------------

  private async newSession(
    params: { cwd: string; mcpServers: McpServer[]; additionalDirectories?: string[] },
    requestId: string,
  ): Promise<{ sessionId: string }> {
    if ((params.additionalDirectories ?? []).length > 0)
      throw new AcpInputError(
        'a Gatehouse session works in one directory: additionalDirectories is not supported',
      );
    const servers = launchMcpServers(params.mcpServers);
    const created = await this.call<{ session_id: string }>('session.create', {
      request_id: `acp:${this.bridgeId}:${requestId}`,
      source: 'acp',
      cwd: params.cwd,
      ...(this.editor !== null ? { editor: this.editor } : {}),
      ...(Object.keys(servers).length > 0 ? { mcp_servers: servers } : {}),
    });
    await this.attach(created.session_id);
    this.sessions.get(created.session_id)!.servers = servers;
    return { sessionId: created.session_id };
  }

  private async loadSession(
    params: { sessionId: string; cwd: string; mcpServers: McpServer[] },
    client: AgentContext,
  ): Promise<Record<string, never>> {
    const servers = launchMcpServers(params.mcpServers);
    const snapshot = await this.attach(params.sessionId);
    if (snapshot.info.cwd !== null && snapshot.info.cwd !== params.cwd) {
      this.sessions.delete(params.sessionId); // not opened: its prompts are refused as unknown
      throw new AcpInputError(
        `session ${params.sessionId} works in ${snapshot.info.cwd}, not ${params.cwd}: open that folder to load it`,
      );
    }
    // The session's own servers, as the editor sends them again: their env and header values,
    // which the gateway never stores, are given back (a server it was not created with is refused).
    try {
      await this.supply(params.sessionId, servers);
    } catch (error) {
      this.sessions.delete(params.sessionId);
      throw error;
    }
    this.sessions.get(params.sessionId)!.servers = servers;
    for (const update of historyUpdates(snapshot.messages))
      await client.notify(methods.client.session.update, { sessionId: params.sessionId, update });
    return {};
  }

  private async prompt(
    sessionId: string,
    blocks: ContentBlock[],
    meta: Record<string, unknown> | null | undefined,
    requestId: string,
    client: AgentContext,
  ): Promise<{ stopReason: 'end_turn' | 'max_tokens' | 'max_turn_requests' | 'refusal' | 'cancelled' }> {
    const session = this.sessions.get(sessionId);
    if (!session) throw RequestError.sessionNotFound(sessionId);
    if (session.turn !== null)
      throw new RequestError(
        RPC_REASONS.session_busy.code,
        'a prompt of this session is still running: wait for its answer, or cancel it',
        { reason: 'session_busy' },
      );
    const text = promptText(blocks);
    const named = meta?.[SUBMISSION_META];
    const submissionId =
      typeof named === 'string' && named !== '' ? named : `acp:${this.bridgeId}:${requestId}`;
    const turn = new PromptTurn(submissionId, {
      update: (update: SessionUpdate) => client.notify(methods.client.session.update, { sessionId, update }),
      approval: (event, toolCallId) => void this.askPermission(session, event, toolCallId, client),
      approvalSettled: (promptId) => session.asking.get(promptId)?.abort(),
    });
    session.turn = turn;
    try {
      // Attached (again, after a restart) before the submission, so no event of the turn is missed.
      if (session.link === null || session.link !== this.link) await this.attach(sessionId, 1);
      const receipt = await this.call<{ admission_id: string; state: string }>('prompt.submit', {
        session_id: sessionId,
        submission_id: submissionId,
        text,
      });
      turn.receipt(receipt);
      if (turn.cancelRequested) this.cancel(sessionId);
      const end = await turn.ended;
      if (end.kind === 'stop') return { stopReason: end.stopReason };
      throw new RequestError(TURN_NOT_COMPLETED, end.error?.message ?? `the turn ended ${end.outcome}`, {
        reason: 'turn_not_completed',
        details: { outcome: end.outcome, admission_id: turn.admissionId, error: end.error },
      });
    } finally {
      session.turn = null;
      for (const asking of session.asking.values()) asking.abort();
    }
  }

  private cancel(sessionId: string): void {
    const session = this.sessions.get(sessionId);
    const turn = session?.turn;
    if (!session || !turn) return;
    turn.cancelRequested = true;
    for (const asking of session.asking.values()) asking.abort();
    // Already over, or the link dropped: nothing is left to stop.
    const ignore = () => undefined;
    if (turn.phase === 'live' && turn.generation !== null)
      this.call('session.interrupt', { session_id: sessionId, execution_generation: turn.generation }).catch(
        ignore,
      );
    else if (turn.phase === 'admitted' && turn.admissionId !== null)
      this.call('prompt.cancel', { session_id: sessionId, admission_id: turn.admissionId })
        .then(
          // Started meanwhile: interrupt the running turn instead.
          async (r) => {
            if (!r['cancelled'] && turn.generation !== null)
              await this.call('session.interrupt', {
                session_id: sessionId,
                execution_generation: turn.generation,
              });
          },
          ignore,
        )
        .catch(ignore);
  }

  /** A Gatehouse approval of the editor's turn → session/request_permission → approval.respond. */
  private async askPermission(
    session: OpenSession,
    event: GatehouseEvent,
    toolCallId: string | null,
    client: AgentContext,
  ): Promise<void> {
    const promptId = String(event['prompt_id']);
    const offered = (event['choices'] as string[] | undefined) ?? ['once', 'deny'];
    const asking = new AbortController();
    session.asking.set(promptId, asking);
    const command = str(event['command']);
    let choice: string;
    try {
      const answer = await client.request(
        methods.client.session.requestPermission,
        {
          sessionId: session.id,
          toolCall: {
            toolCallId: toolCallId ?? promptId,
            title: `${command}${event['reason'] ? ` (${str(event['reason'])})` : ''}`,
            kind: event['kind'] === 'edit' ? 'edit' : toolKind('terminal'),
            status: 'pending',
          },
          options: permissionOptions(offered),
        },
        { cancellationSignal: asking.signal, stopWaitingOnCancel: true },
      );
      choice = approvalChoice(answer.outcome, offered);
    } catch {
      // Answered elsewhere, cancelled, or the editor failed to answer: nothing is approved here.
      if (asking.signal.aborted) return;
      choice = 'deny';
    } finally {
      session.asking.delete(promptId);
    }
    await this.call('approval.respond', {
      session_id: session.id,
      execution_generation: event['execution_generation'],
      prompt_id: promptId,
      choice,
    }).catch(() => undefined); // already answered by another viewer, or the turn is over
  }

  // ---- the link ----------------------------------------------------------------------------------

  /** Makes the session's events reach this bridge on the current link; its snapshot. */
  private async attach(sessionId: string, messageLimit?: number): Promise<Snapshot> {
    const link = await this.currentLink();
    const snapshot = await link.client.call<Snapshot>('session.resume', {
      session_id: sessionId,
      ...(messageLimit !== undefined ? { message_limit: messageLimit } : {}),
    });
    const session = this.sessions.get(sessionId) ?? {
      id: sessionId,
      link: null,
      turn: null,
      asking: new Map<string, AbortController>(),
      servers: {},
      serversGivenOn: link,
    };
    session.link = link;
    this.sessions.set(sessionId, session);
    // A new link: the gateway may have restarted, losing the values only its memory held.
    if (session.serversGivenOn !== link) {
      await this.supply(sessionId, session.servers);
      session.serversGivenOn = link;
    }
    return snapshot;
  }

  /** session.mcp.supply with the editor's servers, when it gave any. */
  private async supply(sessionId: string, servers: Record<string, unknown>): Promise<void> {
    if (Object.keys(servers).length === 0) return;
    await this.call('session.mcp.supply', { session_id: sessionId, mcp_servers: servers });
  }

  private currentLink(): Promise<Link> {
    if (this.link && !this.link.client.closed) return Promise.resolve(this.link);
    this.linking ??= openLink(this.layout)
      .then((link) => {
        this.link = link;
        link.client.onNotification((n) => this.receive(link, n));
        link.client.onClose(() => this.lost(link));
        return link;
      })
      .finally(() => (this.linking = null));
    return this.linking;
  }

  private receive(link: Link, n: Notification): void {
    if (n.method !== 'session.event' || link !== this.link) return;
    const e = n.params as { session_id: string; event: GatehouseEvent };
    this.sessions.get(e.session_id)?.turn?.receive(e.event);
  }

  /** The gateway went away: every turn under way ends with a clear error; the next request reconnects. */
  private lost(link: Link): void {
    if (this.link === link) this.link = null;
    for (const session of this.sessions.values()) {
      if (session.link !== link) continue;
      session.link = null;
      session.turn?.fail(
        'gateway_lost',
        'the gateway stopped while this turn ran. After it restarts the turn goes on or is marked unknown; it is never run twice. Load the session again to see where it stands.',
      );
    }
  }

  private async call<T = Record<string, unknown>>(method: string, params: unknown): Promise<T> {
    const link = await this.currentLink();
    return link.client.call<T>(method, params);
  }

  /** Runs a request, turning a refusal into the ACP error an editor can show. */
  private async guard<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (error instanceof RequestError) throw error;
      if (error instanceof AcpInputError)
        throw new RequestError(RPC_REASONS.invalid_params.code, error.message, { reason: 'invalid_params' });
      if (error instanceof RpcCallError)
        throw new RequestError(error.code, error.message, {
          reason: error.reason,
          ...(error.details !== undefined ? { details: error.details } : {}),
        });
      if (error instanceof ConnectionClosedError)
        throw new RequestError(
          TURN_NOT_COMPLETED,
          'the gateway went away during this request; try it again (it starts the gateway when none runs)',
          { reason: 'turn_not_completed', details: { outcome: 'gateway_lost' } },
        );
      throw new RequestError(
        RPC_REASONS.internal_error.code,
        `could not reach the gateway: ${error instanceof Error ? error.message : String(error)}`,
        { reason: 'internal_error' },
      );
    }
  }
}
