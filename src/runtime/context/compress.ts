/**
 * Context compression (SPEC LIN-1): which messages of a transcript are kept verbatim, which are
 * folded into the summary, and the transcript the model sees afterwards. Pure: no store, no model.
 *
 *   [ head | middle ........................ | tail ]   →   [ head | summary | tail' ]
 *
 * - head: the first exchange (the first user message, and the answer after it when that answer
 *   called no tools) is kept verbatim: it usually states the goal;
 * - tail: the most recent messages, at least `tailTokens` of them and never less than the last
 *   user message and everything after it, are kept verbatim — except inside one long tool loop
 *   (the steps after the last user message alone pass `tailTokens`): then the last user message
 *   and the loop's most recent steps are kept and its earlier steps summarised (inTurnPlan);
 * - middle: everything between, summarised by one model call (summary-prompt.ts). A summary left by
 *   an earlier compression sits at the start of the middle: it is handed to the summariser as the
 *   previous summary to UPDATE, never summarised as conversation;
 * - old tool outputs (outside the tail) are shown to the summariser cut to a stub that says what was
 *   removed; when the result would still be over the budget, older tool outputs of the tail are
 *   stubbed too, the results of the last tool round never.
 *
 * Invariants (test/unit/compress.property.test.ts): the boundaries never fall between an assistant
 * message with tool calls and its results, so every tool result of the result has its call before
 * it and every call its results; no message of head or tail is changed except a stubbed tool output.
 */
import type { TranscriptMessage } from '../../domain/vocabulary.js';
import { toWireMessage } from '../model/wire.js';
import { countMessageTokens } from './tokens.js';

/** How a compression summary message starts: how a later compression finds it. */
export const SUMMARY_MARKER = '[Context summary]';

export const SUMMARY_PREAMBLE =
  `${SUMMARY_MARKER} The earlier part of this conversation was compressed by Gatehouse to fit the ` +
  "model's context window. This summary replaces it; the messages after it are verbatim.";

/** How the note left by a deterministic reduction (no summary) starts, after SUMMARY_MARKER. */
export const DROPPED_NOTE = 'Gatehouse dropped';

/** The stub an old tool output is cut to. */
export const TOOL_STUB_MARKER = '[tool output removed by compression';

export type CompressionPlan =
  | {
      kind: 'plan';
      head: TranscriptMessage[];
      /** The middle to summarise, without an earlier summary. */
      middle: TranscriptMessage[];
      /** The text of the summary an earlier compression left, to be updated. */
      previousSummary: string | null;
      tail: TranscriptMessage[];
    }
  | { kind: 'nothing'; reason: string };

export function isSummaryMessage(message: TranscriptMessage): boolean {
  return message.role === 'user' && (message.content ?? '').startsWith(SUMMARY_MARKER);
}

const EARLIER_SUMMARY = '\n\nAn earlier summary of the conversation said:\n\n';

/**
 * The summary's own text (without the preamble). A note left by a reduction is no summary: its text
 * is the earlier summary it carries, or '' (a later summary must not update the note itself).
 */
export function summaryText(message: TranscriptMessage): string {
  const content = message.content ?? '';
  if (content.startsWith(`${SUMMARY_MARKER} ${DROPPED_NOTE}`)) {
    const at = content.indexOf(EARLIER_SUMMARY);
    return at < 0 ? '' : content.slice(at + EARLIER_SUMMARY.length).trim();
  }
  return content.startsWith(SUMMARY_PREAMBLE)
    ? content.slice(SUMMARY_PREAMBLE.length).trim()
    : content.slice(SUMMARY_MARKER.length).trim();
}

export function tokensOf(message: TranscriptMessage): number {
  return countMessageTokens(toWireMessage(message));
}

/** Where the head ends (exclusive). */
function headEnd(messages: readonly TranscriptMessage[]): number {
  const first = messages.findIndex((m) => m.role === 'user' && !isSummaryMessage(m));
  if (first < 0) return 0;
  const next = messages[first + 1];
  const answered = next?.role === 'assistant' && (next.tool_calls ?? []).length === 0;
  return answered ? first + 2 : first + 1;
}

/** Moves an index back until it does not split an assistant message from its tool results. */
function toBoundary(messages: readonly TranscriptMessage[], index: number): number {
  let i = index;
  while (i > 0 && messages[i]?.role === 'tool') i--;
  return i;
}

export interface PlanOptions {
  tailTokens: number;
  /** A message's tokens (a caller with the counts at hand passes its cache); tokensOf by default. */
  tokens?: (message: TranscriptMessage) => number;
}

export function planCompression(
  messages: readonly TranscriptMessage[],
  options: PlanOptions,
): CompressionPlan {
  return runToEnd(planSteps(messages, options));
}

/** Messages handled between two pause points of planSteps. */
const STEP = 256;

/**
 * planCompression as steps: it yields every STEP messages of its long loops, so a caller holding a
 * long transcript can let the event loop run between them (prepare.ts; issue 32 aim 3).
 */
export function* planSteps(
  messages: readonly TranscriptMessage[],
  options: PlanOptions,
): Generator<void, CompressionPlan, undefined> {
  const count = options.tokens ?? tokensOf;
  const headStop = headEnd(messages);
  const lastUser = messages.findLastIndex((m) => m.role === 'user' && !isSummaryMessage(m));
  // The most recent messages worth `tailTokens`, at a boundary that keeps tool pairs whole.
  let recent = messages.length;
  let tokens = 0;
  while (recent > headStop && tokens < options.tailTokens) {
    recent--;
    tokens += count(messages[recent]!);
    if (recent % STEP === 0) yield;
  }
  recent = toBoundary(messages, recent);
  // Inside a tool loop the tail is never less than its last round (the call and its results on).
  const lastRound = messages.findLastIndex((m) => m.role === 'assistant' && (m.tool_calls ?? []).length > 0);
  const loopRecent = Math.min(recent, lastRound);
  if (lastUser >= 0 && loopRecent > lastUser + 1)
    return yield* inTurnPlan(messages, headStop, lastUser, loopRecent);
  const tailStart = toBoundary(messages, Math.min(recent, Math.max(lastUser, headStop)));
  if (tailStart <= headStop)
    return { kind: 'nothing', reason: 'the conversation is all head and recent tail' };
  return yield* withMiddle(
    messages,
    headStop,
    messages.slice(headStop, tailStart),
    messages.slice(tailStart),
  );
}

function runToEnd<T>(steps: Generator<void, T, undefined>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * Inside one long tool loop (the steps after the last user message alone are worth more than the
 * tail): the last user message is kept verbatim, the loop's earlier steps are summarised with the
 * rest of the middle, and the tail is its most recent steps from an assistant message on, so every
 * tool result kept still follows its call. Without this a single question followed by hundreds of
 * tool calls could never be compressed.
 */
function* inTurnPlan(
  messages: readonly TranscriptMessage[],
  headStop: number,
  lastUser: number,
  recent: number,
): Generator<void, CompressionPlan, undefined> {
  const question = lastUser >= headStop ? [messages[lastUser]!] : [];
  const middle = messages.slice(headStop, recent).filter((_, i) => i + headStop !== lastUser);
  return yield* withMiddle(messages, headStop, middle, [...question, ...messages.slice(recent)]);
}

function* withMiddle(
  messages: readonly TranscriptMessage[],
  headStop: number,
  between: readonly TranscriptMessage[],
  tail: TranscriptMessage[],
): Generator<void, CompressionPlan, undefined> {
  // A summary an earlier compression left is the one to update (normally one; joined if several).
  const previous: string[] = [];
  const middle: TranscriptMessage[] = [];
  for (let i = 0; i < between.length; i++) {
    const message = between[i]!;
    if (isSummaryMessage(message)) {
      const text = summaryText(message);
      if (text !== '') previous.push(text);
    } else middle.push(stubToolOutput(message));
    if (i % STEP === STEP - 1) yield;
  }
  if (middle.length === 0) return { kind: 'nothing', reason: 'nothing new since the last compression' };
  return {
    kind: 'plan',
    head: messages.slice(0, headStop),
    middle,
    previousSummary: previous.length > 0 ? previous.join('\n\n') : null,
    tail,
  };
}

/** A tool result cut to a stub that says what was removed; other messages unchanged. */
export function stubToolOutput(message: TranscriptMessage): TranscriptMessage {
  if (message.role !== 'tool') return message;
  const content = message.content ?? '';
  if (content.length <= 400 || content.startsWith(TOOL_STUB_MARKER)) return message;
  const lines = lineCount(content);
  return {
    ...message,
    content:
      `${TOOL_STUB_MARKER}: ${content.length} characters, ${lines} lines of \`${message.name ?? 'tool'}\` ` +
      `output; it began: ${content.slice(0, 200)}]`,
  };
}

/** `text.split('\n').length` without making the lines (a long middle has thousands of outputs). */
function lineCount(text: string): number {
  let lines = 1;
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) lines++;
  return lines;
}

/**
 * The new transcript: head, the summary, and the tail. With `budgetTokens`, older tool outputs of the
 * tail are stubbed (oldest first) while the whole is over it; the results of the last tool round stay.
 */
export function composeCompressed(
  plan: Extract<CompressionPlan, { kind: 'plan' }>,
  summary: string,
  budgetTokens = Infinity,
): TranscriptMessage[] {
  const result = [...plan.head, summaryMessage(summary), ...plan.tail];
  stubOlderToolOutputs(result, plan.head.length + 1, budgetTokens);
  return result;
}

/** The message a summary stands in as. */
export function summaryMessage(summary: string): TranscriptMessage {
  return { role: 'user', content: `${SUMMARY_PREAMBLE}\n\n${summary.trim()}` };
}

/** Stubs tool outputs of `result` from `from` on, oldest first, while over budget; the last round's stay. */
function stubOlderToolOutputs(result: TranscriptMessage[], from: number, budgetTokens: number): void {
  let total = result.reduce((sum, m) => sum + tokensOf(m), 0);
  const lastRound = result.findLastIndex((m) => m.role === 'assistant' && (m.tool_calls ?? []).length > 0);
  for (let i = from; i < result.length && total > budgetTokens; i++) {
    if (i > lastRound && lastRound >= 0) break;
    const message = result[i]!;
    if (message.role !== 'tool') continue;
    const stubbed = stubToolOutput(message);
    total += tokensOf(stubbed) - tokensOf(message);
    result[i] = stubbed;
  }
}

/** Units that may be dropped together: a tool round (a call and all its results), else one message. */
function units(messages: readonly TranscriptMessage[]): TranscriptMessage[][] {
  const result: TranscriptMessage[][] = [];
  for (const message of messages) {
    const last = result.at(-1);
    if (message.role === 'tool' && last) last.push(message);
    else result.push([message]);
  }
  return result;
}

export interface Reduction {
  messages: TranscriptMessage[];
  /** How many messages were dropped (head and middle), and how many exchanges they began. */
  dropped: number;
  exchanges: number;
}

function droppedNote(
  dropped: number,
  exchanges: number,
  why: string,
  previous: string | null,
): TranscriptMessage {
  return {
    role: 'user',
    content:
      `${SUMMARY_MARKER} ${DROPPED_NOTE} the ${dropped} oldest messages (${exchanges} exchanges) of this ` +
      `conversation to fit the model's context window, without a summary (${why}). The messages ` +
      'after this note are verbatim.' +
      (previous === null ? '' : `${EARLIER_SUMMARY}${previous.trim()}`),
  };
}

/** The note with the largest counts it may say: what reduceByDropping measures a note by. */
export function notePlaceholder(why: string, previous: string | null): TranscriptMessage {
  return droppedNote(99_999, 99_999, why, previous);
}

/**
 * The deterministic reduction, used when no usable summary can be had (issue 26 item 1): the
 * oldest whole exchanges of the head and middle are dropped until the transcript fits
 * `budgetTokens`, and a note in place of the summary says how many messages were dropped and why;
 * a summary an earlier compression left is kept in the note while it fits. A tool call is never
 * separated from its results: the smallest unit dropped is one tool round, and a cut moves on to
 * the start of the next exchange (a user message) when one lies before the tail. No model is
 * involved, so it always ends, and what stays is verbatim.
 */
export function reduceByDropping(
  plan: Extract<CompressionPlan, { kind: 'plan' }>,
  why: string,
  budgetTokens: number,
): Reduction {
  const head = units(plan.head);
  const middle = units(plan.middle);
  const sum = (unit: readonly TranscriptMessage[]) => unit.reduce((n, m) => n + tokensOf(m), 0);
  const fixed = sum(plan.tail);
  // The note's size barely depends on its counts: measured once, with the largest counts it may say.
  const noteTokens = (previous: string | null) => tokensOf(notePlaceholder(why, previous));
  let previous = plan.previousSummary;
  if (previous !== null && noteTokens(previous) + fixed > budgetTokens) previous = null;
  let total = noteTokens(previous) + fixed + head.reduce((n, u) => n + sum(u), 0);
  total += middle.reduce((n, u) => n + sum(u), 0);
  // The middle goes first, oldest first (at least one unit), then the head (the goal) if need be.
  let cut = 0;
  while (cut < middle.length && (cut === 0 || total > budgetTokens)) total -= sum(middle[cut++]!);
  while (
    cut < middle.length &&
    middle[cut]![0]!.role !== 'user' &&
    middle.slice(cut).some((u) => u[0]!.role === 'user')
  )
    cut++;
  // The head is one exchange: it goes whole or not at all.
  const headCut = cut === middle.length && total > budgetTokens ? head.length : 0;
  const dropped = [...head.slice(0, headCut), ...middle.slice(0, cut)].flat();
  const exchanges = dropped.filter((m) => m.role === 'user').length;
  const kept = head.slice(headCut).flat();
  const result = [
    ...kept,
    droppedNote(dropped.length, exchanges, why, previous),
    ...middle.slice(cut).flat(),
    ...plan.tail,
  ];
  stubOlderToolOutputs(result, kept.length + 1, budgetTokens);
  return { messages: result, dropped: dropped.length, exchanges };
}
