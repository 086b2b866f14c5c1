/**
 * The prompt broker (SPEC RUN-3, LOC-7, LOC-9): every question a turn asks a human goes through it.
 *
 * Each prompt gets a fresh unguessable prompt_id bound to (session, execution_generation). An answer
 * names that prompt exactly; it is checked against the session, the generation and the prompt's own
 * choices, and settles that prompt only, never "the next one". A prompt ends in exactly one way:
 * answered, timed out (reported as a timeout, never as a denial) or cancelled by the turn's signal.
 * Prompts live here, not in any connection: viewers come and go, the prompt waits.
 *
 * Memory: a `session` answer remembers the request's pattern for that session; `always` also
 * records it in the AlwaysAllowStore. A remembered pattern is approved without asking.
 */
import { randomBytes } from 'node:crypto';
import {
  APPROVAL_CHOICES,
  type ApprovalChoice,
  type ApprovalOutcome,
  type ApprovalRequest,
  type ClarifyOutcome,
  type ClarifyRequest,
  type PromptHost,
  type TurnEvent,
  type TurnScope,
} from '../types.js';
import { MemoryAlwaysAllowStore, type AlwaysAllowStore } from './always-store.js';
import { Lifecycle } from './lifecycle.js';
import { redactSecrets } from './redact.js';

type ApprovalRequestEvent = Extract<TurnEvent, { type: 'approval.request' }>;
type ClarifyRequestEvent = Extract<TurnEvent, { type: 'clarify.request' }>;

/** An open prompt as a resume snapshot shows it: the request event plus its session and age. */
export type PendingPrompt = (ApprovalRequestEvent | ClarifyRequestEvent) & {
  session_id: string;
  created_at: string;
};

export type BrokerEvent =
  | { type: 'prompt:opened'; prompt: PendingPrompt }
  | {
      type: 'prompt:settled';
      session_id: string;
      prompt_id: string;
      outcome: ApprovalOutcome | ClarifyOutcome;
    }
  | { type: 'approval:remembered'; session_id: string; pattern: string; scope: 'session' | 'always' }
  | { type: 'approval:persist_failed'; pattern: string; message: string };

export type RespondStatus =
  'resolved' | 'already_resolved' | 'not_found' | 'stale_generation' | 'invalid_choice';

export interface RespondResult {
  status: RespondStatus;
}

export interface ApprovalResponse {
  session_id: string;
  execution_generation: number;
  prompt_id: string;
  choice: string;
}

export interface ClarifyResponse {
  session_id: string;
  execution_generation: number;
  prompt_id: string;
  /** Text, or several choices for a multi_select question. Empty means skipped. */
  answer: string | string[];
}

export interface PromptBrokerOptions {
  /** Where `always` answers persist. Default: memory only (lost on restart). */
  alwaysAllow?: AlwaysAllowStore;
  /** How long an approval waits for a human. Default 5 minutes. */
  approvalTimeoutMs?: number;
  /** How long a clarify question waits. Default 10 minutes. */
  clarifyTimeoutMs?: number;
  /** How many settled prompt ids are kept to answer `already_resolved`. Default 4096. */
  settledMemory?: number;
}

export const EDIT_CHOICES: readonly ApprovalChoice[] = ['once', 'deny'];

interface OpenPrompt {
  snapshot: PendingPrompt;
  /** Settles the prompt with the response's outcome; returns false when the response is invalid. */
  answer(value: unknown): boolean;
}

interface SettledPrompt {
  type: PendingPrompt['type'];
  session_id: string;
  execution_generation: number;
}

/** The memory key of a request: its pattern, or the redacted command (never a raw secret). */
export function approvalPattern(request: ApprovalRequest): string {
  return request.pattern ?? `${request.kind}:${redactSecrets(request.command.trim().replace(/\s+/g, ' '))}`;
}

export class PromptBroker implements PromptHost {
  readonly events = new Lifecycle<BrokerEvent>();
  private readonly open = new Map<string, OpenPrompt>();
  private readonly settled = new Map<string, SettledPrompt>();
  private readonly sessionMemory = new Map<string, Set<string>>();
  private readonly alwaysAllow: AlwaysAllowStore;
  private readonly approvalTimeoutMs: number;
  private readonly clarifyTimeoutMs: number;
  private readonly settledMemory: number;

  constructor(options: PromptBrokerOptions = {}) {
    this.alwaysAllow = options.alwaysAllow ?? new MemoryAlwaysAllowStore();
    this.approvalTimeoutMs = options.approvalTimeoutMs ?? 5 * 60_000;
    this.clarifyTimeoutMs = options.clarifyTimeoutMs ?? 10 * 60_000;
    this.settledMemory = options.settledMemory ?? 4096;
  }

  async requestApproval(scope: TurnScope, request: ApprovalRequest): Promise<ApprovalOutcome> {
    if (scope.signal.aborted) return { kind: 'cancelled' };
    const pattern = approvalPattern(request);
    if (request.kind === 'command') {
      const remembered = this.sessionMemory.get(scope.sessionId)?.has(pattern)
        ? 'session'
        : this.alwaysAllow.has(pattern)
          ? 'always'
          : null;
      if (remembered !== null) {
        this.events.emit({
          type: 'approval:remembered',
          session_id: scope.sessionId,
          pattern,
          scope: remembered,
        });
        return { kind: 'approved', choice: 'remembered' };
      }
    }
    const choices = request.kind === 'edit' ? EDIT_CHOICES : APPROVAL_CHOICES;
    const event: ApprovalRequestEvent = {
      type: 'approval.request',
      prompt_id: scope.resumePrompt?.prompt_id ?? newPromptId(),
      execution_generation: scope.executionGeneration,
      kind: request.kind,
      command: redactSecrets(request.command),
      reason: request.reason,
      choices,
    };
    return this.ask<ApprovalOutcome>(scope, event, this.approvalTimeoutMs, (value) => {
      if (typeof value !== 'string' || !(choices as readonly string[]).includes(value)) return null;
      const choice = value as ApprovalChoice;
      if (choice === 'deny') return { kind: 'denied' };
      if (choice === 'session' || choice === 'always') return this.remember(scope.sessionId, pattern, choice);
      return { kind: 'approved', choice };
    });
  }

  async askClarify(scope: TurnScope, request: ClarifyRequest): Promise<ClarifyOutcome> {
    if (scope.signal.aborted) return { kind: 'cancelled' };
    const multiSelect = request.multi_select === true;
    const event: ClarifyRequestEvent = {
      type: 'clarify.request',
      prompt_id: scope.resumePrompt?.prompt_id ?? newPromptId(),
      execution_generation: scope.executionGeneration,
      question: request.question,
      choices: request.choices !== undefined && request.choices.length > 0 ? [...request.choices] : null,
      multi_select: multiSelect,
    };
    return this.ask<ClarifyOutcome>(scope, event, this.clarifyTimeoutMs, (value) => {
      if (typeof value === 'string') {
        return value.trim() === '' ? { kind: 'skipped' } : { kind: 'answered', answer: value };
      }
      if (!multiSelect || !Array.isArray(value) || !value.every((v) => typeof v === 'string')) return null;
      const picked = value.filter((v) => v.trim() !== '');
      return picked.length === 0 ? { kind: 'skipped' } : { kind: 'answered', answer: picked };
    });
  }

  /** Answers the approval prompt named by prompt_id, and only that one (SPEC LOC-9). */
  respondApproval(response: ApprovalResponse): RespondResult {
    return this.respond(response, 'approval.request', response.choice);
  }

  /** Answers the clarify prompt named by prompt_id. An empty answer skips the question. */
  respondClarify(response: ClarifyResponse): RespondResult {
    return this.respond(response, 'clarify.request', response.answer);
  }

  /** Open prompts of a session, oldest first: what a resume snapshot shows (SPEC LOC-7). */
  pendingPrompts(sessionId: string): PendingPrompt[] {
    return [...this.open.values()].filter((p) => p.snapshot.session_id === sessionId).map((p) => p.snapshot);
  }

  /** How many prompts wait for an answer, and when the oldest was first asked (ISO), for metrics. */
  waiting(): { count: number; oldest: string | null } {
    let oldest: string | null = null;
    for (const { snapshot } of this.open.values()) {
      if (oldest === null || Date.parse(snapshot.created_at) < Date.parse(oldest))
        oldest = snapshot.created_at;
    }
    return { count: this.open.size, oldest };
  }

  /** Drops a session's `session` approvals (its execution ended or it was reset). */
  forgetSession(sessionId: string): void {
    this.sessionMemory.delete(sessionId);
  }

  private remember(sessionId: string, pattern: string, choice: 'session' | 'always'): ApprovalOutcome {
    let memory = this.sessionMemory.get(sessionId);
    if (memory === undefined) this.sessionMemory.set(sessionId, (memory = new Set()));
    memory.add(pattern);
    if (choice === 'session') return { kind: 'approved', choice };
    try {
      this.alwaysAllow.add(pattern);
      return { kind: 'approved', choice };
    } catch (error) {
      // The human said yes; a disk failure must not turn that into a no. It is remembered for the
      // session only, and the failure is published so the operator can see it.
      this.events.emit({ type: 'approval:persist_failed', pattern, message: (error as Error).message });
      return { kind: 'approved', choice: 'session' };
    }
  }

  private respond(
    response: { session_id: string; execution_generation: number; prompt_id: string },
    type: PendingPrompt['type'],
    value: unknown,
  ): RespondResult {
    const open = this.open.get(response.prompt_id);
    const known = open?.snapshot ?? this.settled.get(response.prompt_id);
    // A prompt of another session, or of the other kind, is as unknown to this caller as no prompt.
    if (known === undefined || known.session_id !== response.session_id || known.type !== type) {
      return { status: 'not_found' };
    }
    if (known.execution_generation !== response.execution_generation) return { status: 'stale_generation' };
    if (open === undefined) return { status: 'already_resolved' };
    return { status: open.answer(value) ? 'resolved' : 'invalid_choice' };
  }

  /** Opens a prompt and resolves with exactly one outcome: an answer, the timeout or the abort. */
  private ask<O extends ApprovalOutcome | ClarifyOutcome>(
    scope: TurnScope,
    event: ApprovalRequestEvent | ClarifyRequestEvent,
    timeoutMs: number,
    decide: (value: unknown) => O | null,
  ): Promise<O> {
    return new Promise<O>((resolve) => {
      // A prompt recreated after a crash (REC-7) keeps its original request time and timeout.
      const createdAt = scope.resumePrompt?.requested_at ?? new Date().toISOString();
      const waitMs = Math.max(0, timeoutMs - Math.max(0, Date.now() - Date.parse(createdAt)));
      const snapshot: PendingPrompt = { ...event, session_id: scope.sessionId, created_at: createdAt };
      const settle = (outcome: O): void => {
        if (!this.open.delete(event.prompt_id)) return;
        clearTimeout(timer);
        scope.signal.removeEventListener('abort', onAbort);
        this.rememberSettled(event.prompt_id, snapshot);
        const settledType = event.type === 'approval.request' ? 'approval.settled' : 'clarify.settled';
        scope.emit({ type: settledType, prompt_id: event.prompt_id, outcome } as TurnEvent);
        this.events.emit({
          type: 'prompt:settled',
          session_id: scope.sessionId,
          prompt_id: event.prompt_id,
          outcome,
        });
        resolve(outcome);
      };
      const onAbort = (): void => settle({ kind: 'cancelled' } as O);
      const timer = setTimeout(() => settle({ kind: 'timeout' } as O), waitMs);
      this.open.set(event.prompt_id, {
        snapshot,
        answer: (value) => {
          const outcome = decide(value);
          if (outcome === null) return false;
          settle(outcome);
          return true;
        },
      });
      scope.signal.addEventListener('abort', onAbort, { once: true });
      scope.emit(event);
      this.events.emit({ type: 'prompt:opened', prompt: snapshot });
    });
  }

  private rememberSettled(promptId: string, snapshot: PendingPrompt): void {
    this.settled.set(promptId, {
      type: snapshot.type,
      session_id: snapshot.session_id,
      execution_generation: snapshot.execution_generation,
    });
    if (this.settled.size > this.settledMemory) {
      const oldest = this.settled.keys().next().value;
      if (oldest !== undefined) this.settled.delete(oldest);
    }
  }
}

function newPromptId(): string {
  return `prm_${randomBytes(16).toString('base64url')}`;
}
