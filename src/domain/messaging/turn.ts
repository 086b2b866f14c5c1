/**
 * One messaging turn: session (ENT-2) → in-flight marker (+ the inbound message taken and the user
 * message stored, one commit) → prompt (CTX-1/2, KEY-3) → runTurn → the final answer, usage and the
 * reply on the ledger, which drops the marker (one commit, the runner's commitFinal) → delivery.
 * The marker is set before the model is called and is dropped only with the reply's ledger row, or
 * when there is nothing to deliver.
 */
import { randomBytes } from 'node:crypto';
import { inboundRefOf, type MessageEvent, type PlatformAdapter } from './adapter.js';
import { isSilentReply } from './recovery.js';
import { NO_TRACER, SPAN } from '../../runtime/tracing.js';
import { buildSessionContext, buildSessionContextPrompt, renderSenderPrefix } from '../session/context.js';
import { isSharedMultiUserSession } from '../session/key.js';
import { SessionSource } from '../session/source.js';
import type { SessionEntry, TranscriptMessage } from '../vocabulary.js';
import { runTurn, TURN_TIMEOUT, type TurnEnding, type TurnResult } from '../../runtime/runner.js';
import { keepTyping, timeLimit } from './turn-clocks.js';
import type { Delivery, ReplyRecord } from '../ports/delivery-ledger.js';
import type { SessionStore } from '../ports/session-store.js';
import type { AgentLease } from '../agents/agent-cache.js';
import { compressPlatformSession } from './compression.js';
import { compressionNotice } from '../session/compression-notice.js';
import type { TurnContext } from '../../runtime/context/budget.js';
import { recordingPrompts, stepResumeOf, type ResumeStep } from '../session/step-resume.js';
import { onTurnEvent, type PromptShowing } from './turn-prompts.js';
import type { RunningTurn, TurnDeps } from './turn-types.js';
import { turnUsage, usedTokens } from '../session/usage.js';
import { stored, type StoredWrite } from './stored.js';
import { platformBudgetHint } from './budget-command.js';
import { chatPrincipal } from '../auth/chat-members.js';

/**
 * What the agent is told when it continues a turn the last restart interrupted (REC-4) and the turn
 * cannot resume at its step (REC-7: no step record, or its tool was running under `unknown`).
 */
export const RESUME_NOTE =
  'System note: the gateway restarted while you were answering the previous message. Continue where you left off.';

/**
 * What a chat is told when a restart interrupted its turn and the turn goes on at its last durable
 * step (REC-7): the platform's `turn.resumed`.
 */
export function resumedNotice(step: ResumeStep, closedRunningTool: boolean): string {
  const next =
    step === 'model'
      ? 'asks the model again with the conversation as it was stored'
      : step === 'tool'
        ? 'runs the next tool call, which had not started'
        : step === 'approval'
          ? 'asks for the same approval again'
          : 'asks its question again';
  const lost = closedRunningTool
    ? ' The command that was running then may or may not have finished; the model is told so.'
    : '';
  return `The gateway restarted while it was answering your message. It goes on where it stopped: it ${next}.${lost}`;
}

/** What a chat is told when its turn ran past `limits.turn_timeout_s` and was stopped. */
export const TURN_TIMEOUT_NOTICE =
  'Stopped: that request took longer than the time one turn may run (limits.turn_timeout_s), so it ' +
  'was stopped. Send it again, perhaps in smaller steps.';

/** The auto-continue event (REC-4) of every resume_pending session whose platform is connected. */
export async function* resumeEvents(
  store: SessionStore,
  connected: (platform: string) => boolean,
): AsyncGenerator<{ sessionKey: string; entry: SessionEntry; event: MessageEvent }> {
  let cursor: string | null = null;
  do {
    const page = await store.listSessions({ limit: 500, cursor });
    for (const entry of page.entries) {
      if (!entry.resume_pending || entry.suspended || entry.origin === null) continue;
      if (!connected(entry.origin.platform)) continue;
      const event: MessageEvent = {
        source: SessionSource.fromJSON(entry.origin),
        text: RESUME_NOTE,
        internal: true,
        received_at: new Date().toISOString(),
      };
      yield { sessionKey: entry.session_key, entry, event };
    }
    cursor = page.nextCursor;
  } while (cursor !== null);
}

export function newTurnId(): string {
  return `msg_${randomBytes(12).toString('base64url')}`;
}

export function startingTurn(backlogItem: string | null = null): RunningTurn {
  return {
    turnId: newTurnId(),
    sessionId: null,
    abort: new AbortController(),
    backlogItem,
    started: false,
    approval: null,
    clarify: null,
  };
}

export async function executeTurn(
  deps: TurnDeps,
  sessionKey: string,
  event: MessageEvent,
  adapter: PlatformAdapter,
  running: RunningTurn,
): Promise<void> {
  // One of limits.max_concurrent_turns' places, shared with local turns, before anything is read.
  // A /stop, /new or drain while it waits ends the wait: the turn then finds itself aborted below.
  const release = deps.permits ? await deps.permits.acquireUnless(running.abort.signal) : null;
  try {
    await executeTurnHolding(deps, sessionKey, event, adapter, running);
  } finally {
    release?.();
  }
}

async function executeTurnHolding(
  deps: TurnDeps,
  sessionKey: string,
  event: MessageEvent,
  adapter: PlatformAdapter,
  running: RunningTurn,
): Promise<void> {
  const source = event.source;
  // A full disk: the turn waits for the store (issue 26 item 5), and goes on once it is back.
  const access = await stored(() => deps.store.getOrCreateSession(sessionKey, source.toJSON()), {
    ...waitFor(deps, sessionKey, running),
    operation: 'session',
  });
  const entry = access.entry;
  running.sessionId = entry.session_id;
  const keyOptions = deps.keyOptionsFor(source.platform);
  // KEY-3: the system prompt is built from facts constant for the session, so it is byte-identical
  // from turn to turn; the speaker is named in the user message instead.
  const context = buildSessionContext(source, {
    ...keyOptions,
    connectedPlatforms: deps.connectedPlatforms(),
    homeChannels: deps.homeChannels,
    entry,
  });
  const contextPrompt = buildSessionContextPrompt(context, {
    redactPii: deps.redactPiiFor(source.platform),
    piiSafePlatforms: deps.piiSafePlatforms(),
  });
  const systemPrompt = deps.baseSystemPrompt ? `${deps.baseSystemPrompt}\n\n${contextPrompt}` : contextPrompt;
  // Read before the input is stored with the marker (the runner is given the input apart), and
  // before the abort check, so nothing is awaited between that check and the start.
  const agent = await deps.agents.acquire(sessionKey, entry.session_id, { systemPrompt, tools: deps.tools });
  try {
    await runAgentTurn(deps, sessionKey, event, adapter, running, entry, agent);
  } finally {
    agent.release();
  }
}

async function runAgentTurn(
  deps: TurnDeps,
  sessionKey: string,
  event: MessageEvent,
  adapter: PlatformAdapter,
  running: RunningTurn,
  entry: SessionEntry,
  agent: AgentLease,
): Promise<void> {
  const source = event.source;
  // REC-7: an auto-continue whose interrupted turn left a step record resumes that turn at its
  // boundary, under a new execution generation; otherwise it is a new turn continuing with the
  // restart note (REC-4).
  const resumed =
    event.internal && event.text === RESUME_NOTE
      ? await stepResumeOf(deps, sessionKey, entry.session_id, agent)
      : null;
  if (running.abort.signal.aborted) {
    // /stop or /new came while the session was looked up: the turn never starts, nothing is stored.
    deps.events.emit('turn:complete', {
      session_key: sessionKey,
      session_id: entry.session_id,
      turn_id: running.turnId,
      outcome: 'interrupted',
      final_text: null,
    });
    return;
  }
  const turnId = resumed?.record.turnId ?? running.turnId;
  const input = resumed?.input ?? inputOf(deps, event, running.turnId);
  const generation = resumed?.generation ?? 1;

  // The marker, "this message was taken", the end of its backlog row and the user message in one
  // transaction: after a crash the message is waiting (and its redelivery dropped), or this turn
  // is resumed, with its input stored, or delivered. A resumed turn stored its input before, and
  // keeps its first start (the freshness window counts from there).
  const backlogItem = running.backlogItem;
  running.started = true;
  const trace = (deps.tracer ?? NO_TRACER).turn(
    { turnId, run: generation - 1 },
    {
      'gatehouse.engine': 'platform',
      'gatehouse.platform': source.platform,
      'gatehouse.session.id': entry.session_id,
      'gen_ai.conversation.id': entry.session_id,
      'gatehouse.turn.generation': generation,
      'gatehouse.turn.resumed': resumed !== null,
    },
  );
  const admission = trace.child(SPAN.admission, { 'gatehouse.platform': source.platform });
  try {
    // One transaction that rolls back whole when refused: waited out while the disk is full.
    await stored(
      () =>
        deps.ledger.startTurn(
          sessionKey,
          inboundRefOf(event, (id) => adapter.normalizeChatId(id)),
          resumed
            ? { backlogItem, turnId, now: new Date(resumed.record.startedAt) }
            : { backlogItem, turnId, input: { sessionId: entry.session_id, message: input } },
        ),
      { ...waitFor(deps, sessionKey, running), operation: 'start' },
    );
  } catch (error) {
    trace.fail('admission_failed');
    trace.end();
    throw error;
  } finally {
    admission.end();
  }
  if (backlogItem !== null) {
    running.backlogItem = null;
    deps.backlogTaken(sessionKey, backlogItem);
  }
  deps.events.emit('turn:start', {
    session_key: sessionKey,
    session_id: entry.session_id,
    turn_id: running.turnId,
    text: event.text,
  });
  if (resumed) {
    trace
      .child(SPAN.resume, {
        'gatehouse.resume.step': resumed.point.step,
        'gatehouse.resume.closed_tool_call_id': resumed.point.closed,
        'gatehouse.turn.resumes': resumed.record.resumes,
      })
      .end();
    deps.events.emit('turn:resumed', {
      session_key: sessionKey,
      session_id: entry.session_id,
      turn_id: turnId,
      step: resumed.point.step,
      execution_generation: generation,
      closed_tool_call_id: resumed.point.closed,
    });
    // Told before the turn goes on, so it reads before what the resumed turn says; a failed send
    // is not retried (the turn's reply is the one the ledger owes).
    await adapter
      .send(source.chat_id, resumedNotice(resumed.point.step, resumed.point.closed !== null), {
        thread_id: source.thread_id,
        reply_to: null,
      })
      .catch(() => undefined);
  }

  const mapped = deps.principalFor(source);
  const principal = chatPrincipal(source, mapped);
  // A mapped user's message is their submission (issue 30); a wake-up is nobody's.
  if (mapped !== null && !event.internal && resumed === null)
    deps.audit?.({
      at: new Date().toISOString(),
      principal: mapped.subject,
      path: source.platform,
      action: 'submitted',
      session_id: entry.session_id,
      outcome: 'ok',
      detail: { turn_id: turnId },
    });
  const target = {
    platform: source.platform,
    chat_id: source.chat_id,
    thread_id: source.thread_id,
    reply_to: event.internal ? null : source.message_id,
  };
  // The turn's model, budget-guarded; the compression inside the turn writes its summary with it.
  const model = deps.budget
    ? deps.budget.guard.guard(deps.model, {
        sessionKey,
        principal,
        turnId,
        sessionLimit: null,
        price: deps.budget.price,
        hint: platformBudgetHint(mapped),
        emit: (budgetEvent) =>
          deps.events.emit('budget', { session_key: sessionKey, turn_id: turnId, event: budgetEvent }),
      })
    : null;
  // A compression inside the turn moves the key to a child transcript: later writes follow it.
  let sessionId = entry.session_id;
  const compression = deps.compression;
  const budget: TurnContext | undefined = compression && {
    settings: compression.settings,
    compress: async (reason, signal) => {
      const outcome = await compressPlatformSession(
        model ? { ...compression, model } : compression,
        sessionKey,
        sessionId,
        reason,
        signal,
      );
      if (outcome.kind === 'skipped') return outcome;
      // running.sessionId stays: prompts of this turn are bound to the id the turn started with.
      sessionId = outcome.sessionId;
      // The runner goes on with the compressed view: the cached agent holds the old transcript.
      deps.agents.invalidate(sessionKey);
      // The chat is told, before the reply (issue 26 item 3); a failed send is not retried.
      await adapter
        .send(
          source.chat_id,
          `(${compressionNotice({ messages_before: outcome.before.messages, messages_after: outcome.after.messages, method: outcome.method })})`,
          {
            thread_id: source.thread_id,
            reply_to: null,
          },
        )
        .catch(() => undefined);
      return { kind: 'compressed', messages: outcome.messages };
    },
  };
  const replyOf = (text: string, silent: boolean): ReplyRecord => ({
    turnId: running.turnId,
    sessionKey,
    sessionId,
    target,
    text,
    silent,
  });

  // The reply recorded with the turn's end (null: nothing to deliver, or the end did not commit).
  const ended: { delivery: Delivery | null } = { delivery: null };
  // Whether the turn's end (with its usage) reached the ledger; reset if that commit failed.
  let endCommitted = false;
  // Reserved before the ledger row exists, so no sweep sends this reply while the turn is still on
  // its way to sending it; released after the turn's own delivery attempt.
  const release = deps.deliverer.reserve(running.turnId);
  const stopTyping = keepTyping(adapter, source.chat_id, source.thread_id, deps.typing);
  const stopClock = timeLimit(running.abort, deps.turnTimeoutMs);
  let currentCall: string | null = null;
  const shown: PromptShowing = { turnId, interrupted: resumed?.record.prompt ?? null };
  let result: TurnEnding;
  try {
    try {
      result = await runTurn({
        sessionId: entry.session_id,
        admissionId: turnId,
        executionGeneration: generation,
        model: model ?? deps.model,
        ...(deps.modelName === undefined ? {} : { modelName: deps.modelName }),
        systemPrompt: agent.systemPrompt,
        tools: [...agent.tools],
        cwd: deps.cwdFor(source.platform, source.chat_id),
        yolo: deps.yolo,
        maxTurns: deps.maxTurns,
        history: agent.messages.slice(0, resumed?.before),
        wireHistory: agent.wire.slice(0, resumed?.before),
        input,
        inputStored: true,
        ...(resumed ? { resume: { turn: resumed.point.turn, calls: resumed.point.calls } } : {}),
        // REC-7: durable before the tool's process is spawned; a result clears it in its own commit.
        markToolStarted: (call) => deps.ledger.markToolStarted(sessionKey, turnId, call.id),
        trace,
        transcript: {
          append: (_id, messages) =>
            messages.some((m) => m.role === 'tool')
              ? deps.ledger.recordToolResult(sessionKey, turnId, sessionId, messages)
              : deps.store.appendToTranscript(sessionId, messages).then(() => undefined),
        },
        ...(budget ? { context: budget } : {}),
        // Issue 28: messages sent during the turn on a `during_turn: steer` platform, at each boundary.
        steers: () =>
          deps.takeSteers(sessionKey, sessionId, turnId, (steer, steerId) => ({
            ...inputOf(deps, steer, turnId),
            steer_id: steerId,
          })),
        // STO-1: the final answer, its reply on the ledger (which drops the marker), the usage and the
        // resume/streak bookkeeping are one commit; a failure leaves none of them, and the marker set.
        commitFinal: async (messages, ending) => {
          const completed = ending.outcome === 'completed';
          const streaking = completed && deps.streaking.has(sessionKey);
          // The turn's end is one transaction: while the disk is full it waits, the answer held
          // in memory, and commits once the store takes it (issue 26 item 5).
          ended.delivery = await stored(
            () =>
              deps.ledger.endTurn(
                sessionKey,
                {
                  sessionId,
                  turnId,
                  principal,
                  messages,
                  // Counted whatever the outcome, as a local turn's are: the provider billed them.
                  usage: turnUsage(ending),
                  clearResumePending: completed && entry.resume_pending,
                  endStreak: streaking,
                },
                replyFor(ending, replyOf, model?.refusal?.newly_paused ?? false),
              ),
            { ...waitFor(deps, sessionKey, running), operation: 'end' },
          );
          endCommitted = true;
          if (streaking) deps.streaking.delete(sessionKey);
        },
        prompts: recordingPrompts(
          deps.prompts,
          (prompt) =>
            deps.ledger.recordTurnPrompt(sessionKey, turnId, { ...prompt, execution_generation: generation }),
          resumed?.record.prompt ?? null,
          () => currentCall,
        ),
        signal: running.abort.signal,
        emit: (turnEvent) => {
          if (turnEvent.type === 'tool.start') currentCall = turnEvent.tool_call_id;
          deps.observe?.(turnEvent.type);
          onTurnEvent(deps, sessionKey, adapter, event, running, turnEvent, shown);
        },
      });
    } finally {
      stopClock();
      stopTyping();
    }
    deps.events.emit('turn:complete', {
      session_key: sessionKey,
      session_id: entry.session_id,
      turn_id: running.turnId,
      outcome: result.outcome,
      final_text: result.final_text,
    });
    // The end did not commit (the runner reports it as a failed turn): the marker is still set, and
    // the user is told on the ledger, which drops it. Its tokens were spent all the same.
    let owed = ended.delivery;
    if (!endCommitted && usedTokens(result)) {
      await deps.store.addUsage(sessionKey, turnUsage(result)).catch(() => undefined);
    }
    if (owed === null) {
      const reply = replyFor(result, replyOf, model?.refusal?.newly_paused ?? false);
      if (reply !== null)
        owed = await stored(() => deps.ledger.recordReply(reply), {
          ...waitFor(deps, sessionKey, running),
          operation: 'reply',
        });
    }
    // The reply is owed whatever happens next: nothing else would send it before the next failed
    // send or restart.
    if (owed !== null) {
      const delivery = trace.child(SPAN.delivery, { 'gatehouse.platform': source.platform });
      try {
        await deps.deliverer.deliver(owed);
      } finally {
        delivery.end();
      }
    }
  } finally {
    release();
    trace.end();
  }
}

/** How a turn's writes wait for the store: until stopped (/stop, /new, a drain's deadline) or halted. */
function waitFor(deps: TurnDeps, sessionKey: string, running: RunningTurn): Omit<StoredWrite, 'operation'> {
  return {
    events: deps.events,
    sessionKey,
    signal: running.abort.signal,
    stop: () => deps.halted?.() === true,
  };
}

/** The user message a turn stores with its start: the raw text and, in a shared chat, the speaker. */
function inputOf(deps: TurnDeps, event: MessageEvent, turnId: string): TranscriptMessage {
  const source = event.source;
  const shared = isSharedMultiUserSession(source, deps.keyOptionsFor(source.platform));
  // The transcript keeps the raw text and the speaker; the wire renders `[sender] text` from them.
  // renderSenderPrefix neutralises brackets and line breaks, so a name cannot forge a speaker.
  const prefix = renderSenderPrefix(source.user_name ?? source.user_id ?? 'unknown', '');
  return {
    ...(shared && !event.internal
      ? { role: 'user', content: event.text, sender_name: prefix.slice(1, prefix.lastIndexOf(']')) }
      : { role: 'user', content: event.text }),
    admission_id: turnId,
  };
}

/** The reply a turn's end owes its chat; null when it owes none (interrupted or cancelled). */
function replyFor(
  result: TurnResult,
  replyOf: (text: string, silent: boolean) => ReplyRecord,
  /** The turn's budget refusal paused the conversation just now: the chat is told, once. */
  newlyPaused: boolean,
): ReplyRecord | null {
  // /stop, /new or a drain answered the chat already: there is nothing to deliver.
  if (result.outcome === 'interrupted' || result.outcome === 'cancelled') return null;
  if (result.outcome === 'completed') {
    const text = result.final_text ?? '';
    return replyOf(text, isSilentReply(text));
  }
  if (result.error?.reason === TURN_TIMEOUT) return replyOf(TURN_TIMEOUT_NOTICE, false);
  // One notice per pause: later messages while it lasts are recorded and not answered.
  if (result.error?.reason === 'budget_exhausted') return replyOf(result.error.message, !newlyPaused);
  return replyOf(`Sorry, that turn failed: ${result.error?.message ?? 'unknown error'}`, false);
}

/**
 * A turn failed with an internal error (the store refused a write, a bug). The chat is told, and
 * the notice is the turn's reply like any other: recorded on the delivery ledger before it is sent
 * and marked delivered after, so it survives a crash and is counted (`delivery:sent`). Recording it
 * ends the turn's in-flight marker: the user has been answered, so the turn is not resumed. A reply
 * the turn recorded already wins (one reply per turn) and is sent if still owed. Only when the
 * ledger refuses the notice too is it sent directly; the marker then stays, recovered like a crash.
 */
export async function answerFailure(
  deps: TurnDeps,
  sessionKey: string,
  event: MessageEvent,
  adapter: PlatformAdapter,
  running: RunningTurn,
  error: unknown,
): Promise<void> {
  const why = (error instanceof Error ? error.message : String(error)).split('\n')[0];
  const text = `Sorry, something went wrong: ${why}`;
  const source = event.source;
  const release = deps.deliverer.reserve(running.turnId);
  try {
    const record = {
      turnId: running.turnId,
      sessionKey,
      sessionId: running.sessionId ?? '',
      target: {
        platform: source.platform,
        chat_id: source.chat_id,
        thread_id: source.thread_id,
        reply_to: event.internal ? null : source.message_id,
      },
      text,
      silent: false,
    };
    const delivery = await stored(() => deps.ledger.recordReply(record), {
      ...waitFor(deps, sessionKey, running),
      operation: 'reply',
    });
    await deps.deliverer.deliver(delivery);
  } catch {
    // Halted (the bots' leases are gone, SCL-1): the instance that takes the bots over answers.
    if (deps.halted?.() !== true) {
      await adapter
        .send(source.chat_id, text, { thread_id: source.thread_id, reply_to: null })
        .catch(() => undefined);
    }
  } finally {
    release();
  }
  deps.events.emit('turn:complete', {
    session_key: sessionKey,
    session_id: running.sessionId ?? '',
    turn_id: running.turnId,
    outcome: 'failed',
    final_text: null,
  });
}
