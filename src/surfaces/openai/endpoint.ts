/**
 * The OpenAI-compatible endpoint (docs/integrations.md): `GET /v1/models` and
 * `POST /v1/chat/completions` on the daemon's listener. A request is one admission of a Gatehouse
 * session, run as its turn with the session's own tools and approvals; the request follows the turn
 * as one more viewer and answers with its final text, streamed or not. The session lives on when
 * the request ends, and the turn runs on when the client goes away.
 *
 * Exactly-once: an `Idempotency-Key` becomes the admission's submission id, so a retry (after a lost
 * response, a dropped stream, a daemon restart) finds the same admission and answers with its turn
 * — attaching to it while it runs — and a different request under the same key is refused 409.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hasCapability, type Capability, type Principal } from '../../domain/auth/principal.js';
import { GatewayError } from '../../domain/errors.js';
import type { PublicEvent } from '../../domain/local/hub.js';
import type { LocalSessions } from '../../domain/local/service.js';
import type { AdmissionRow } from '../../domain/ports/local-store.js';
import type { Logger } from '../../protocol/logger.js';
import { sendJson } from '../rpc/http-routes.js';
import type { ApiKeys } from './keys.js';
import { TurnWatch, type TurnSettlement } from './turn-watch.js';
import {
  badRequest,
  chunk,
  completion,
  GATEHOUSE_MODEL,
  newestUserText,
  OpenAiError,
  parseChatRequest,
  requestDigest,
  usageOf,
  type ChatRequest,
} from './wire.js';

export const SESSION_HEADER = 'x-gatehouse-session';
const MAX_BODY_BYTES = 8 * 1024 * 1024;
/** How far back a settled turn's answer is looked for in its transcript (pages of 200). */
const ANSWER_PAGES = 10;

export interface OpenAiEndpointDeps {
  sessions: Pick<
    LocalSessions,
    'create' | 'follow' | 'viewerGone' | 'admission' | 'reads' | 'inputs' | 'claimRequestKey'
  >;
  keys: ApiKeys;
  /** `api_server.approval_wait_s` in ms: how long a request waits on a turn that waits for a human. */
  approvalWaitMs: number;
  /** When the daemon started (the listed model's `created`). */
  startedAt: number;
  logger: Logger;
}

type Admitted = Pick<AdmissionRow, 'admission_id' | 'admitted_at'>;

function refuse(res: ServerResponse, error: OpenAiError, headers: Record<string, string> = {}): void {
  sendJson(res, error.status, error.body(), { 'x-should-retry': String(error.retry), ...headers });
}

/** A refusal of the local-session engine in OpenAI's shape. */
function fromGateway(error: GatewayError): OpenAiError {
  switch (error.reason) {
    case 'not_found':
      return new OpenAiError(404, 'invalid_request_error', 'session_not_found', error.message);
    case 'permission_denied':
      return new OpenAiError(403, 'permission_error', 'permission_denied', error.message);
    case 'invalid_params':
      return badRequest('invalid_value', error.message);
    case 'admission_conflict':
      return new OpenAiError(
        409,
        'invalid_request_error',
        'idempotency_key_reused',
        'this Idempotency-Key was already used with a different request',
      );
    case 'runtime_draining':
      return new OpenAiError(503, 'server_error', 'draining', error.message, null, true);
    default:
      return new OpenAiError(500, 'server_error', error.reason, error.message);
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const piece of req as AsyncIterable<Buffer>) {
    size += piece.length;
    if (size > MAX_BODY_BYTES)
      throw new OpenAiError(413, 'invalid_request_error', 'body_too_large', 'the request body is over 8 MiB');
    chunks.push(piece);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw badRequest('invalid_json', 'the body is not JSON');
  }
}

function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return typeof value === 'string' && value !== '' ? value : null;
}

function needScope(principal: Principal, capability: Capability, why: string): void {
  if (!hasCapability(principal, capability))
    throw new OpenAiError(
      403,
      'permission_error',
      'missing_scope',
      `this key's scopes do not include ${capability}, which ${why}`,
    );
}

export class OpenAiEndpoint {
  constructor(private readonly deps: OpenAiEndpointDeps) {}

  /** Serves a `/v1/` request; false when the path is not one of the endpoint's. */
  handle(req: IncomingMessage, res: ServerResponse, path: string): boolean {
    if (path === '/v1/models' || path === '/v1/chat/completions') {
      void this.serve(req, res, path);
      return true;
    }
    if (!path.startsWith('/v1/')) return false;
    refuse(res, new OpenAiError(404, 'invalid_request_error', 'unknown_url', `no endpoint ${path} here`));
    return true;
  }

  private async serve(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    try {
      const principal = this.deps.keys.authenticate(req);
      if (path === '/v1/models') {
        if (req.method !== 'GET') throw methodNotAllowed('GET');
        return sendJson(res, 200, { object: 'list', data: [this.model()] });
      }
      if (req.method !== 'POST') throw methodNotAllowed('POST');
      await this.chatCompletion(req, res, principal);
    } catch (error) {
      const refusal =
        error instanceof OpenAiError
          ? error
          : error instanceof GatewayError
            ? fromGateway(error)
            : new OpenAiError(500, 'server_error', 'internal_error', 'internal error', null, true);
      if (!(error instanceof OpenAiError) && !(error instanceof GatewayError))
        this.deps.logger.error({ path, err: error }, 'openai endpoint failed');
      if (!res.headersSent) refuse(res, refusal);
      else if (!res.writableEnded) endStream(res, refusal);
    }
  }

  private model(): Record<string, unknown> {
    return {
      id: GATEHOUSE_MODEL,
      object: 'model',
      created: Math.floor(this.deps.startedAt / 1000),
      owned_by: 'gatehouse',
    };
  }

  private async chatCompletion(
    req: IncomingMessage,
    res: ServerResponse,
    principal: Principal,
  ): Promise<void> {
    needScope(principal, 'session:submit', 'a chat completion needs (it is a prompt to a session)');
    needScope(principal, 'session:read', 'a chat completion needs (it reads the answer)');
    const request = parseChatRequest(await readJson(req));
    if (request.model !== GATEHOUSE_MODEL)
      throw new OpenAiError(
        404,
        'invalid_request_error',
        'model_not_found',
        `the model ${JSON.stringify(request.model)} does not exist: this endpoint serves "${GATEHOUSE_MODEL}" (a Gatehouse session, running the model its launch policy names)`,
        'model',
      );
    const text = newestUserText(request);
    const idempotencyKey = header(req, 'idempotency-key');
    if (idempotencyKey !== null && (idempotencyKey.length > 255 || /[^\x20-\x7e]/.test(idempotencyKey)))
      throw badRequest(
        'invalid_idempotency_key',
        'Idempotency-Key must be 1 to 255 printable ASCII characters',
      );
    const sessionHeader = header(req, SESSION_HEADER);
    const sessionId = sessionHeader ?? (await this.sessionOf(principal, request));

    const stream = request.stream === true;
    const out = stream ? new SseOut(res) : null;
    let waitTimer: NodeJS.Timeout | null = null;
    let pendingPrompt: PublicEvent | null = null;
    let timedOut!: (prompt: PublicEvent) => void;
    const approvalTimeout = new Promise<PublicEvent>((resolve) => (timedOut = resolve));
    const startWait = (event: PublicEvent): void => {
      pendingPrompt = event;
      waitTimer ??= setTimeout(() => timedOut(pendingPrompt ?? event), this.deps.approvalWaitMs);
    };
    const watch = new TurnWatch(principal, {
      delta: (piece) => out?.content(piece),
      notice: (event) => out?.notice(event),
      waiting: (waiting, event) => {
        if (waiting) return startWait(event);
        pendingPrompt = null;
        if (waitTimer) clearTimeout(waitTimer);
        waitTimer = null;
      },
    });
    // Attached before the submission, so no event of the turn can pass unseen.
    await this.deps.sessions.follow(principal, watch, sessionId);
    const cleanup = (): void => {
      if (waitTimer) clearTimeout(waitTimer);
      this.deps.sessions.viewerGone(watch.id);
    };
    res.once('close', cleanup);
    try {
      const digest = requestDigest(request, sessionHeader);
      // The key is bound to this request first, so reusing it for another one (another session
      // too) is refused before anything is admitted; a crash between the two leaves a binding the
      // retry matches, and the submission id below makes the admission itself exactly-once.
      if (idempotencyKey !== null)
        await this.deps.sessions.claimRequestKey(principal, {
          key_hash: sha256(idempotencyKey),
          digest,
          logical_id: sessionId,
        });
      const submitted = (await this.deps.sessions.inputs.submit(principal, {
        session_id: sessionId,
        submission_id:
          idempotencyKey === null
            ? `openai:${randomUUID()}`
            : `openai:${sha256(`${principal.subject}\n${idempotencyKey}`)}`,
        text,
        digest,
      })) as { admission_id: string; admitted_at: string; state: string };
      const admission: Admitted = submitted;
      watch.admitted(admission.admission_id, submitted.state === 'running');
      const headers = {
        'x-gatehouse-session': sessionId,
        'x-gatehouse-admission': admission.admission_id,
      };
      out?.begin(admission, headers);
      if (submitted.state === 'running') {
        const row = await this.deps.sessions.admission(principal, sessionId, admission.admission_id);
        if (row?.prompt) startWait({ type: `${row.prompt.type}.request`, prompt_id: row.prompt.prompt_id });
      }
      const settlement = isSettled(submitted.state)
        ? { outcome: submitted.state, finalText: null, usage: undefined, error: null }
        : await Promise.race([watch.settled, approvalTimeout.then((prompt) => ({ waiting: prompt }))]);
      if ('waiting' in settlement) {
        const refusal = approvalPending(settlement.waiting, idempotencyKey !== null);
        if (out) return endStream(res, refusal);
        return refuse(res, refusal, headers);
      }
      const answer = await this.answer(principal, sessionId, admission, settlement);
      const usage = usageOf(settlement.usage);
      if (out)
        return out.finish(
          watch.streamedLive ? null : answer,
          request.stream_options?.include_usage ? usage : null,
        );
      sendJson(res, 200, completion(admission, answer, usage), headers);
    } finally {
      cleanup();
    }
  }

  /** The session the `user` field names (one per key and user), made at its first request. */
  private async sessionOf(principal: Principal, request: ChatRequest): Promise<string> {
    needScope(
      principal,
      'session:create',
      'a request without X-Gatehouse-Session needs (its session is made on first use)',
    );
    const user = request.user ?? 'default';
    const created = await this.deps.sessions.create(principal, {
      request_id: `openai:user:${user}`,
      source: 'api',
      title: `api: ${user}`,
    });
    return created.session_id as string;
  }

  /** The turn's final text, or the refusal its outcome earns. */
  private async answer(
    principal: Principal,
    sessionId: string,
    admission: Admitted,
    settlement: TurnSettlement,
  ): Promise<string> {
    if (settlement.outcome === 'completed') {
      if (settlement.finalText !== null) return settlement.finalText;
      return this.storedAnswer(principal, sessionId, admission.admission_id);
    }
    const row = await this.deps.sessions.admission(principal, sessionId, admission.admission_id);
    const detail = settlement.error?.message ?? row?.detail ?? null;
    switch (settlement.outcome) {
      case 'failed':
        throw new OpenAiError(
          502,
          'server_error',
          'turn_failed',
          `the turn failed${detail ? `: ${detail}` : ''}`,
        );
      case 'unknown':
        throw new OpenAiError(
          409,
          'invalid_request_error',
          'turn_unknown',
          'the daemon stopped while this turn ran, and a turn is never run twice: its outcome is unknown. ' +
            `Resolve it (gatehouse chat /resolve, the dashboard, or prompt.resolve_unknown for admission ${admission.admission_id}) before the session takes more input`,
        );
      default:
        throw new OpenAiError(
          409,
          'invalid_request_error',
          `turn_${settlement.outcome}`,
          `the turn was ${settlement.outcome}${detail ? `: ${detail}` : ''}`,
        );
    }
  }

  /** A settled turn's final answer, read back from the transcript (a retry after the turn ended). */
  private async storedAnswer(principal: Principal, sessionId: string, admissionId: string): Promise<string> {
    let before: number | null = null;
    for (let page = 0; page < ANSWER_PAGES; page++) {
      const { messages, has_more } = await this.deps.sessions.reads.messages(principal, {
        session_id: sessionId,
        before_id: before,
        limit: 200,
      });
      const ours = messages.filter((m) => m.admission_id === admissionId);
      const last = ours.reverse().find((m) => m.role === 'assistant' && typeof m.content === 'string');
      if (last) return last.content as string;
      if (!has_more || messages.length === 0) break;
      before = messages[0]!.id as number;
    }
    throw new OpenAiError(
      410,
      'invalid_request_error',
      'answer_gone',
      'the turn completed, but its answer is no longer in the transcript (a compression, reset or undo since)',
    );
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function isSettled(state: string): boolean {
  return state !== 'queued' && state !== 'running';
}

function methodNotAllowed(allowed: string): OpenAiError {
  return new OpenAiError(405, 'invalid_request_error', 'method_not_allowed', `use ${allowed}`);
}

function approvalPending(prompt: PublicEvent, keyed: boolean): OpenAiError {
  const what = typeof prompt.command === 'string' ? ` (${prompt.command})` : '';
  const kind = prompt.type === 'clarify.request' ? 'a question' : 'an approval';
  return new OpenAiError(
    409,
    'invalid_request_error',
    'approval_pending',
    `the turn waits for ${kind}${what}, prompt ${String(prompt.prompt_id)}: answer it in gatehouse chat or the dashboard, ` +
      (keyed
        ? "then send this request again with the same Idempotency-Key for the turn's answer"
        : 'then read the answer there (send requests with an Idempotency-Key to pick it up by retrying)'),
    null,
    keyed,
  );
}

/** A streamed answer: OpenAI's server-sent events, `data: <chunk>` each, `data: [DONE]` last. */
class SseOut {
  private admission: Admitted | null = null;
  private readonly pending: string[] = [];

  constructor(private readonly res: ServerResponse) {}

  begin(admission: Admitted, headers: Record<string, string>): void {
    this.admission = admission;
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      ...headers,
    });
    this.write(chunk(admission, { role: 'assistant', content: '' }, null));
    for (const piece of this.pending.splice(0)) this.content(piece);
  }

  content(text: string): void {
    if (this.admission === null) return void this.pending.push(text);
    this.write(chunk(this.admission, { content: text }, null));
  }

  notice(event: PublicEvent): void {
    if (this.admission === null) return;
    this.write(chunk(this.admission, {}, null, { gatehouse: { event } }));
  }

  /** The last chunks: the whole text when it was not streamed live, the stop, the usage, [DONE]. */
  finish(text: string | null, usage: ReturnType<typeof usageOf>): void {
    const admission = this.admission!;
    if (text !== null && text !== '') this.write(chunk(admission, { content: text }, null));
    this.write(chunk(admission, {}, 'stop'));
    if (usage) this.write({ ...chunk(admission, {}, null), choices: [], usage });
    this.res.end('data: [DONE]\n\n');
  }

  private write(value: unknown): void {
    if (!this.res.writableEnded) this.res.write(`data: ${JSON.stringify(value)}\n\n`);
  }
}

/** A stream that already began ends with OpenAI's error event (its clients raise it). */
function endStream(res: ServerResponse, error: OpenAiError): void {
  if (!res.headersSent) {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' });
  }
  res.end(`data: ${JSON.stringify(error.body())}\n\n`);
}
