/**
 * The one model call of a compression: the instructions, the structured template every summary
 * follows, and how the middle of a transcript is written out for it. Shared with the demo model,
 * which answers this request deterministically (src/runtime/demo/summary.ts).
 */
import type { TranscriptMessage } from '../../domain/vocabulary.js';
import type { WireMessage } from '../model/wire.js';
import { LoopSlices } from './slices.js';
import { countTextTokens } from './tokens.js';

/** The first line of the summariser's instructions: how the demo model recognises the request. */
export const SUMMARY_REQUEST_MARKER = 'Gatehouse context compression.';

/** The sections of every summary, in order. */
export const SUMMARY_SECTIONS = [
  'Goal',
  'Constraints',
  'Done',
  'In progress',
  'Blocked',
  'Key decisions',
  'Files and identifiers',
  'Next steps',
] as const;

export const SUMMARY_INSTRUCTIONS = [
  SUMMARY_REQUEST_MARKER,
  'You are shortening the middle of a conversation between a user and an AI agent, so that the agent',
  'can carry on without it. The start of the conversation and its most recent messages are kept',
  'verbatim; you only see what lies between them. Write a summary the agent can act on, with exactly',
  `these Markdown sections, in this order: ${SUMMARY_SECTIONS.map((s) => `## ${s}`).join(', ')}.`,
  'Under each, short bullet points; "- none" when there is nothing. Keep every file path, command,',
  'identifier, number and decision that may matter later, verbatim. When a previous summary is given,',
  'UPDATE it with what the new messages tell: keep what still holds, move finished work to Done, drop',
  'what was superseded. Do not summarise the summary. Answer with the summary only.',
].join('\n');

/** Where the previous summary and the new messages sit in the request (the demo model parses these). */
export const PREVIOUS_SUMMARY_OPEN = '<previous-summary>';
export const PREVIOUS_SUMMARY_CLOSE = '</previous-summary>';
export const CONVERSATION_OPEN = '<conversation>';
export const CONVERSATION_CLOSE = '</conversation>';

/** The longest a single message is shown to the summariser, in characters. */
const MESSAGE_CLIP_CHARS = 2_000;

/** One message as one or more `[role] text` lines of the summariser's conversation. */
export function renderForSummary(message: TranscriptMessage): string {
  const lines: string[] = [];
  const text = clip(message.content ?? '');
  switch (message.role) {
    case 'user':
      lines.push(`[user${message.sender_name ? ` ${message.sender_name}` : ''}] ${text}`);
      break;
    case 'assistant':
      if (text) lines.push(`[assistant] ${text}`);
      for (const call of message.tool_calls ?? [])
        lines.push(`[assistant calls ${call.function.name}] ${clip(call.function.arguments)}`);
      break;
    case 'tool':
      lines.push(`[tool ${message.name ?? 'result'}] ${text}`);
      break;
    case 'system':
      lines.push(`[system] ${text}`);
      break;
  }
  return lines.join('\n');
}

function clip(text: string): string {
  const flat = text.replace(/\s*\n\s*/g, ' ⏎ ');
  if (flat.length <= MESSAGE_CLIP_CHARS) return flat;
  return `${flat.slice(0, MESSAGE_CLIP_CHARS)} [… ${flat.length - MESSAGE_CLIP_CHARS} more characters not shown]`;
}

/**
 * The summariser's request. `maxTokens` bounds what the summariser is shown: when the middle is
 * larger, its oldest messages are left out (and the request says how many), since the previous
 * summary and the kept head already carry the start of the conversation.
 */
export function summaryRequest(
  middle: readonly TranscriptMessage[],
  previousSummary: string | null,
  maxTokens: number,
): WireMessage[] {
  let budget =
    maxTokens - countTextTokens(SUMMARY_INSTRUCTIONS) - countTextTokens(previousSummary ?? '') - 64;
  const lines: string[] = [];
  let shown = 0;
  for (let i = middle.length - 1; i >= 0; i--) {
    const line = renderForSummary(middle[i]!);
    if (line === '') continue;
    const cost = countTextTokens(line) + 1;
    if (cost > budget && shown > 0) break;
    const fitted = cost > budget ? cutToTokens(line, budget) : line;
    budget -= cost;
    lines.unshift(fitted);
    shown = middle.length - i;
  }
  const omitted = middle.length - shown;
  const parts: string[] = [];
  if (previousSummary !== null)
    parts.push(PREVIOUS_SUMMARY_OPEN, previousSummary.trim(), PREVIOUS_SUMMARY_CLOSE);
  if (omitted > 0) parts.push(`(${omitted} older messages did not fit and are not shown.)`);
  parts.push(CONVERSATION_OPEN, ...lines, CONVERSATION_CLOSE);
  return [
    { role: 'system', content: SUMMARY_INSTRUCTIONS },
    { role: 'user', content: parts.join('\n') },
  ];
}

/** The start of `text` that fits `tokens` (at least a few characters), marked as cut. */
function cutToTokens(text: string, tokens: number): string {
  let cut = text;
  while (cut.length > 16 && countTextTokens(cut) + 8 > tokens)
    cut = cut.slice(0, Math.floor(cut.length * 0.7));
  return cut === text ? text : `${cut} [… cut to fit]`;
}

/**
 * The middle split into consecutive pieces whose summary requests each fit `maxTokens` beside the
 * instructions (issue 26 item 1: the summary request itself fits the window, however long the
 * history). Every piece holds at least one message; one too large alone is cut by summaryRequest.
 */
export async function summaryPieces(
  middle: readonly TranscriptMessage[],
  maxTokens: number,
): Promise<TranscriptMessage[][]> {
  const room = Math.max(1, maxTokens - countTextTokens(SUMMARY_INSTRUCTIONS) - 64);
  const pieces: TranscriptMessage[][] = [];
  let piece: TranscriptMessage[] = [];
  let used = 0;
  // Counted in slices: a long middle would otherwise hold the event loop for its whole count.
  const slices = new LoopSlices();
  for (const message of middle) {
    if (slices.due()) await slices.pause();
    const cost = countTextTokens(renderForSummary(message)) + 1;
    if (piece.length > 0 && used + cost > room) {
      pieces.push(piece);
      piece = [];
      used = 0;
    }
    piece.push(message);
    used += cost;
  }
  if (piece.length > 0) pieces.push(piece);
  return pieces;
}

/** Every text summaryPieces and summaryRequest count for `middle` (what to prime for them). */
export function* summaryTexts(
  middle: readonly TranscriptMessage[],
  previousSummary: string | null,
): Generator<string, void, undefined> {
  yield SUMMARY_INSTRUCTIONS;
  if (previousSummary !== null) yield previousSummary;
  for (const message of middle) yield renderForSummary(message);
}
