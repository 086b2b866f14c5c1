/**
 * The prompt broker (SPEC RUN-3, LOC-7, LOC-9): every question a turn asks a human goes through it.
 *
 * Each prompt gets a fresh unguessable prompt_id bound to (session, execution_generation). An answer
 * names that prompt exactly; it is checked against the session, the generation and the prompt's own
 * choices, and settles that prompt only, never "the next one". A prompt ends in exactly one way:
 * answered, timed out (reported as a timeout, never as a denial) or cancelled by the turn's signal.
 * Prompts live here, not in any connection: viewers come and go, the prompt waits.
 *
 * Mode: a request that carries a `gate` is decided by decideApproval (decide.ts) with the broker's
 * configured `approvals.mode` first: run without asking, ask, or refuse without asking. The broker
 * serves every surface (local sessions, chat platforms, safe mode, step resume), so this is the one
 * place a mode is honoured.
 *
 * Memory (issue 25): a `session` answer remembers the exact command for that session; `always` also
 * records it in the AlwaysAllowStore. The key is the SHA-256 of kind, cwd and the full command text,
 * never of what was shown (redacted text can look the same for different commands).
 */
import { createHash, randomBytes } from 'node:crypto';
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
import { MemoryAlwaysAllowStore, type AlwaysAllowStore, type AlwaysRule } from './always-store.js';
import { decideApproval, type ApprovalMode } from './decide.js';
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
  | { type: 'approval:remembered'; session_id: string; rule_id: string; scope: 'session' | 'always' }
  | { type: 'approval:refused'; session_id: string; mode: ApprovalMode }
  | { type: 'approval:persist_failed'; rule_id: string; message: string };

/** A remembered approval as `approvals.list` shows it. */
export interface RememberedRule extends AlwaysRule {
  scope: 'session' | 'always';
  /** The session a `session` rule belongs to; null for `always`. */
  session_id: string | null;
}

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
  /** Who answers (`subject@provider`), set by the gateway from the caller's principal (traces). */
  answered_by?: string;
}

export interface ClarifyResponse {
  session_id: string;
  execution_generation: number;
  prompt_id: string;
  /** Text, or several choices for a multi_select question. Empty means skipped. */
  answer: string | string[];
  /** Who answers (`subject@provider`), set by the gateway from the caller's principal (traces). */
  answered_by?: string;
}

export interface PromptBrokerOptions {
  /** `approvals.mode`: how gated requests are decided. Default `default`. */
  mode?: ApprovalMode;
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
  answer(value: unknown, by: string | undefined): boolean;
}

interface SettledPrompt {
  type: PendingPrompt['type'];
  session_id: string;
  execution_generation: number;
}

/** The memory key of a request: SHA-256 of its kind, cwd and exact full command. */
export function approvalKey(request: ApprovalRequest): string {
  return createHash('sha256')
    .update(`${request.kind}\0${request.cwd ?? ''}\0${request.command}`)
    .digest('hex');
}

/** The rule a `session` or `always` answer records (what was shown, never the full command). */
function ruleFor(request: ApprovalRequest): AlwaysRule {
  const key = approvalKey(request);
  return {
    id: `apr_${key.slice(0, 16)}`,
    key,
    kind: request.kind,
    cwd: request.cwd ?? '',
    shown: shownCommand(request.command),
    created_at: new Date().toISOString(),
  };
}

/**
 * The command as a prompt shows it: in full, with known secret shapes masked. Long random-looking
 * strings stay visible: they may be the payload (a base64 program) the human is asked to approve.
 */
export function shownCommand(command: string): string {
  return redactSecrets(command, { keepLongStrings: true });
}

/** What `session` and `always` would approve, in the words the prompt shows. */
export function scopeNote(cwd: string | undefined): string {
  const where = cwd === undefined || cwd === '' ? '' : ` in ${cwd}`;
  return `"session" approves this exact command${where}, for this session; "always" approves this exact command${where}, from now on`;
}

export class PromptBroker implements PromptHost {
  readonly events = new Lifecycle<BrokerEvent>();
  private readonly open = new Map<string, OpenPrompt>();
  private readonly settled = new Map<string, SettledPrompt>();
  private readonly sessionMemory = new Map<string, Map<string, AlwaysRule>>();
  private readonly mode: ApprovalMode;
  private readonly alwaysAllow: AlwaysAllowStore;
  private readonly approvalTimeoutMs: number;
  private readonly clarifyTimeoutMs: number;
  private readonly settledMemory: number;

  constructor(options: PromptBrokerOptions = {}) {
    this.alwaysAllow = options.alwaysAllow ?? new MemoryAlwaysAllowStore();
    this.mode = options.mode ?? 'default';
    this.approvalTimeoutMs = options.approvalTimeoutMs ?? 5 * 60_000;
    this.clarifyTimeoutMs = options.clarifyTimeoutMs ?? 10 * 60_000;
    this.settledMemory = options.settledMemory ?? 4096;
  }

  async requestApproval(scope: TurnScope, request: ApprovalRequest): Promise<ApprovalOutcome> {
    if (scope.signal.aborted) return { kind: 'cancelled' };
    if (request.gate !== undefined) {
      const decision = decideApproval({ mode: this.mode, allowListed: false, ...request.gate });
      if (decision === 'run') return { kind: 'approved', choice: 'yolo' };
      if (decision === 'refuse') {
        this.events.emit({ type: 'approval:refused', session_id: scope.sessionId, mode: this.mode });
        return { kind: 'denied', by: 'config' };
      }
    }
    const rule = ruleFor(request);
    if (request.kind === 'command') {
      const remembered = this.sessionMemory.get(scope.sessionId)?.has(rule.key)
        ? 'session'
        : this.alwaysAllow.has(rule.key)
          ? 'always'
          : null;
      if (remembered !== null) {
        this.events.emit({
          type: 'approval:remembered',
          session_id: scope.sessionId,
          rule_id: rule.id,
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
      command: rule.shown,
      reason: request.reason,
      choices,
      ...(request.kind === 'command' ? { scope: scopeNote(request.cwd) } : {}),
    };
    return this.ask<ApprovalOutcome>(scope, event, this.approvalTimeoutMs, (value) => {
      if (typeof value !== 'string' || !(choices as readonly string[]).includes(value)) return null;
      const choice = value as ApprovalChoice;
      if (choice === 'deny') return { kind: 'denied' };
      if (choice === 'session' || choice === 'always') return this.remember(scope.sessionId, rule, choice);
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

  /** Every remembered approval: `session` rules of live sessions, then `always` rules. */
  listRemembered(): RememberedRule[] {
    const session = [...this.sessionMemory.entries()].flatMap(([sessionId, rules]) =>
      [...rules.values()].map((r) => ({ ...r, scope: 'session' as const, session_id: sessionId })),
    );
    const always = this.alwaysAllow.list().map((r) => ({ ...r, scope: 'always' as const, session_id: null }));
    return [...session, ...always];
  }

  /** Forgets the rule with this id wherever it is remembered; false when it is nowhere. */
  revokeRemembered(id: string): boolean {
    let found = false;
    for (const rules of this.sessionMemory.values()) {
      for (const [key, rule] of rules) {
        if (rule.id === id) found = rules.delete(key) || found;
      }
    }
    return this.alwaysAllow.revoke(id) || found;
  }

  private remember(sessionId: string, rule: AlwaysRule, choice: 'session' | 'always'): ApprovalOutcome {
    let memory = this.sessionMemory.get(sessionId);
    if (memory === undefined) this.sessionMemory.set(sessionId, (memory = new Map<string, AlwaysRule>()));
    memory.set(rule.key, rule);
    if (choice === 'session') return { kind: 'approved', choice };
    try {
      this.alwaysAllow.add(rule);
      return { kind: 'approved', choice };
    } catch (error) {
      // The human said yes; a disk failure must not turn that into a no. It is remembered for the
      // session only, and the failure is published so the operator can see it.
      this.events.emit({
        type: 'approval:persist_failed',
        rule_id: rule.id,
        message: (error as Error).message,
      });
      return { kind: 'approved', choice: 'session' };
    }
  }

  private respond(
    response: { session_id: string; execution_generation: number; prompt_id: string; answered_by?: string },
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
    return { status: open.answer(value, response.answered_by) ? 'resolved' : 'invalid_choice' };
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
        answer: (value, by) => {
          const outcome = decide(value);
          if (outcome === null) return false;
          if (by !== undefined) scope.answered?.(event.prompt_id, by);
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
