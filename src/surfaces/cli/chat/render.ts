/**
 * How the chat shows a session: live events, stored history, prompts and the banner. Pure: each
 * function returns the text to write, so every rendering rule is unit-tested without a terminal.
 * Every text that came from the model, a tool or the store passes through `visible` (control
 * characters shown, never obeyed) before the chat's own styling is added.
 */
import { visible } from '../visible.js';
import { renderMarkdown, type MarkdownStyle } from './markdown.js';
import { compressionNotice } from '../../../domain/session/compression-notice.js';

export interface Style {
  dim(text: string): string;
  bold(text: string): string;
  /** On a terminal: answers are rendered as Markdown with these styles (markdown.ts); absent: as written. */
  markdown?: MarkdownStyle;
}

export const PLAIN: Style = { dim: (t) => t, bold: (t) => t };
export const ANSI: Style = {
  dim: (t) => (t === '' ? t : `\u001b[2m${t}\u001b[22m`),
  bold: (t) => (t === '' ? t : `\u001b[1m${t}\u001b[22m`),
};

/** Where the output stands between events: inside a streamed line, and what this turn showed. */
export interface RenderState {
  /** The last write did not end with a newline. */
  midLine: boolean;
  /** What is streaming now, so a switch between reasoning and text starts a new line. */
  streaming: 'text' | 'reasoning' | null;
  /** The current turn streamed answer text (turn.complete then need not print final_text). */
  streamedText: boolean;
}

export const INITIAL_RENDER: RenderState = { midLine: false, streaming: null, streamedText: false };

export interface ChatEvent {
  type: string;
  [field: string]: unknown;
}

export interface StoredMessageView {
  role: string;
  content: string | null;
  reasoning?: string | null;
  tool_calls?: { function?: { name?: string; arguments?: string }; name?: string; arguments?: string }[];
  /** On a tool message: whether it failed, and the approval a human gave or refused for it. */
  tool_outcome?: { is_error?: boolean; approval?: string };
  /** The turn was interrupted at this message. */
  interrupted?: boolean;
}

/** The one prompt of the chat: shown while it waits for a line, and before every user message. */
export const PROMPT = '> ';

const MAX_ARGS = 200;
const MAX_SUMMARY = 160;

export function oneLineOf(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function str(value: unknown): string {
  return typeof value === 'string'
    ? visible(value)
    : value === undefined || value === null
      ? ''
      : JSON.stringify(value);
}

/** A tool call as one line: `⚙ terminal pwd && ls` for a lone string argument, else compact JSON. */
export function toolCallLine(name: string, args: string): string {
  let shown = visible(args);
  try {
    const parsed = JSON.parse(args) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      const values = Object.values(parsed);
      shown = visible(
        values.length === 1 && typeof values[0] === 'string' ? values[0] : JSON.stringify(parsed),
      );
    }
  } catch {
    // Arguments that are not JSON are shown as the model sent them.
  }
  return `⚙ ${visible(name)} ${oneLineOf(shown, MAX_ARGS)}`.trimEnd();
}

const CHOICE_KEYS: Record<string, string> = {
  once: '[o]nce',
  session: '[s]ession',
  always: '[a]lways',
  deny: '[d]eny',
};

export function approvalQuestion(event: ChatEvent): string {
  const choices = (Array.isArray(event['choices']) ? event['choices'] : ['once', 'deny']) as string[];
  const keys = choices.map((c) => CHOICE_KEYS[c] ?? c).join(' ');
  const reason = str(event['reason']);
  const scope = str(event['scope']);
  return `Allow \`${str(event['command'])}\`?${reason ? ` (${reason})` : ''}${scope ? `\n  ${scope}\n` : ''} ${keys} `;
}

export function clarifyQuestion(event: ChatEvent): string {
  const lines = [`? ${str(event['question'])}`];
  const choices = Array.isArray(event['choices']) ? (event['choices'] as string[]) : [];
  choices.forEach((choice, i) => lines.push(`  ${i + 1}. ${visible(String(choice))}`));
  lines.push(choices.length > 0 ? '(a number, your own words, or empty to skip) ' : '(empty to skip) ');
  return lines.join('\n');
}

function outcomeText(outcome: unknown): string {
  const o = (outcome ?? {}) as { kind?: string; choice?: string; answer?: unknown };
  switch (o.kind) {
    case 'approved':
      return `approved (${o.choice ?? 'once'})`;
    case 'answered':
      return `answered: ${Array.isArray(o.answer) ? o.answer.join(', ') : str(o.answer)}`;
    case undefined:
      return 'settled';
    default:
      return o.kind;
  }
}

/** Renders one live event; returns what to write and the state after it. */
export function renderEvent(
  state: RenderState,
  event: ChatEvent,
  style: Style = PLAIN,
): { text: string; state: RenderState } {
  const breakLine = state.midLine ? '\n' : '';
  const line = (text: string, extra: Partial<RenderState> = {}) => ({
    text: `${breakLine}${text}\n`,
    state: { ...state, midLine: false, streaming: null, ...extra },
  });
  switch (event.type) {
    case 'turn.start':
      return { text: '', state: { ...INITIAL_RENDER } };
    case 'text.delta': {
      const delta = str(event['text']);
      const lead = state.streaming === 'reasoning' && state.midLine ? '\n' : '';
      return {
        text: `${lead}${delta}`,
        state: {
          midLine: delta === '' ? state.midLine && lead === '' : !delta.endsWith('\n'),
          streaming: 'text',
          streamedText: true,
        },
      };
    }
    case 'reasoning.delta': {
      const delta = str(event['text']);
      const lead = state.streaming === 'text' && state.midLine ? '\n' : '';
      return {
        text: `${lead}${style.dim(delta)}`,
        state: {
          ...state,
          midLine: delta === '' ? state.midLine && lead === '' : !delta.endsWith('\n'),
          streaming: 'reasoning',
        },
      };
    }
    case 'tool.start':
      return line(style.dim(toolCallLine(str(event['name']), str(event['arguments']))));
    case 'tool.complete': {
      const mark = event['is_error'] === true ? '✗' : '↳';
      return line(style.dim(`  ${mark} ${oneLineOf(str(event['summary']), MAX_SUMMARY)}`));
    }
    case 'approval.request':
      return {
        text: `${breakLine}${style.bold(approvalQuestion(event))}`,
        state: { ...state, midLine: true, streaming: null },
      };
    case 'clarify.request':
      return {
        text: `${breakLine}${style.bold(clarifyQuestion(event))}`,
        state: { ...state, midLine: true, streaming: null },
      };
    case 'approval.settled':
    case 'clarify.settled':
      return line(style.dim(`  ${outcomeText(event['outcome'])}`));
    case 'turn.complete': {
      const outcome = str(event['outcome']);
      if (outcome === 'completed') {
        const final = str(event['final_text']);
        if (!state.streamedText && final !== '')
          return line(answerText(final, style), { streamedText: false });
        return state.midLine
          ? { text: '\n', state: { ...INITIAL_RENDER } }
          : { text: '', state: { ...INITIAL_RENDER } };
      }
      const error = event['error'] as { reason?: string; message?: string } | null | undefined;
      if (outcome === 'failed') {
        return line(
          `✗ the turn failed: ${visible(error?.message ?? 'no reason given')}${error?.reason ? ` (${error.reason})` : ''}`,
          {
            streamedText: false,
          },
        );
      }
      return line(style.dim(`(turn ${outcome})`), { streamedText: false });
    }
    case 'hook.blocked':
      return line(`  ⛔ blocked by the hook "${str(event['hook'])}": ${str(event['reason'])}`);
    case 'hook.failed':
      return line(
        `  ! the ${str(event['event'])} hook "${str(event['hook'])}" failed: it ${str(event['message'])}`,
      );
    case 'checkpoint.skipped':
      return line(`  ! no checkpoint was taken before ${str(event['tool'])}: ${str(event['reason'])}`);
    case 'checkpoint.restored':
      return line(
        style.dim(
          `(restored checkpoint ${str(event['checkpoint'])}: ${str(event['recreated'])} recreated, ` +
            `${str(event['reverted'])} reverted, ${str(event['removed'])} removed; ` +
            `the files before are checkpoint ${str(event['saved_as'])})`,
        ),
      );
    default:
      // message.stored, admission.*, checkpoint.created and unknown types show nothing by themselves.
      return { text: '', state };
  }
}

/** An answer's text (already `visible`), as Markdown on a terminal; as written elsewhere. */
function answerText(text: string, style: Style): string {
  return style.markdown ? renderMarkdown(text, style.markdown) : text;
}

/** A user message as the transcript shows it: after the same prompt the user typed it at. */
export function userLine(content: string | null, style: Style = PLAIN): string {
  return `${style.bold(PROMPT.trimEnd())} ${visible(content ?? '')}\n`;
}

/** Approval answers given without asking anyone (remembered, yolo) were not shown live either. */
const ASKED = new Set(['once', 'session', 'always', 'denied', 'timeout', 'cancelled']);

/** Stored history (a resume, or a catch-up from a snapshot): one block per message. */
/** Where a compression or reset happened in a full history (session.history `boundaries`). */
export interface HistoryBoundaryView {
  index: number;
  kind: string;
  at: string;
  messages_before?: number;
  messages_after?: number;
  method?: string;
}

/** The line `sessions --show` draws where a compression or a reset happened (issue 26 item 3). */
export function boundaryLine(b: HistoryBoundaryView): string {
  const at = b.at.slice(0, 19).replace('T', ' ');
  return b.kind === 'reset'
    ? `──── reset at ${at}: the conversation started over; the model sees nothing above this line ────`
    : `──── compressed at ${at}: ${compressionNotice({ ...b })} ────`;
}

export function renderHistory(
  messages: readonly StoredMessageView[],
  style: Style = PLAIN,
  boundaries: readonly HistoryBoundaryView[] = [],
): string {
  let out = '';
  for (const [index, m] of messages.entries()) {
    for (const b of boundaries) if (b.index === index) out += `${style.bold(boundaryLine(b))}\n`;
    if (m.role === 'user') out += userLine(m.content, style);
    else if (m.role === 'assistant') {
      if (m.reasoning) out += `${style.dim(visible(m.reasoning))}\n`;
      if (m.content) out += `${answerText(visible(m.content), style)}\n`;
      for (const call of m.tool_calls ?? []) {
        const name = call.function?.name ?? call.name ?? 'tool';
        const args = call.function?.arguments ?? call.arguments ?? '';
        out += `${style.dim(toolCallLine(name, args))}\n`;
      }
    } else if (m.role === 'tool') {
      // As the live events showed it: the approval's outcome, then the result's summary.
      const approval = m.tool_outcome?.approval;
      if (approval !== undefined && ASKED.has(approval)) {
        const settled = approval === 'once' || approval === 'session' || approval === 'always';
        const outcome = settled ? { kind: 'approved', choice: approval } : { kind: approval };
        out += `${style.dim(`  ${outcomeText(outcome)}`)}\n`;
      }
      const mark = m.tool_outcome?.is_error === true ? '✗' : '↳';
      out += `${style.dim(`  ${mark} ${oneLineOf(visible(m.content ?? ''), MAX_SUMMARY)}`)}\n`;
    }
    // One note per interrupted turn, after its last message (several tool calls may be cut short).
    const next = messages[index + 1];
    if (m.interrupted === true && !(next?.role === 'tool' && next.interrupted === true)) {
      out += `${style.dim('(turn interrupted)')}\n`;
    }
  }
  // A step after the last message (a reset, nothing said since) still shows.
  for (const b of boundaries) if (b.index >= messages.length) out += `${style.bold(boundaryLine(b))}\n`;
  return out;
}

export interface BannerFacts {
  sessionId: string;
  cwd: string | null;
  /** The session's model name. */
  model: string | null;
  /** The gateway's own description of its model (gateway.json `model`). */
  gatewayModel: string;
  demo: boolean;
  resumed: boolean;
  /** The files the session's instructions came from (session.info); null: not kept for it. */
  instructions: { rules: string[]; personal: string | null } | null;
}

/** `rules: /p/AGENTS.md · personal instructions: ~/.gatehouse/AGENTS.md`, or that there are none. */
export function instructionsLine(files: NonNullable<BannerFacts['instructions']>): string {
  const parts = [
    files.rules.length > 0 ? `rules: ${files.rules.map(visible).join(', ')}` : 'rules: none',
    files.personal !== null
      ? `personal instructions: ${visible(files.personal)}`
      : 'personal instructions: none',
  ];
  return parts.join(' · ');
}

export function banner(facts: BannerFacts, style: Style = PLAIN): string {
  const model = facts.demo ? facts.gatewayModel : (facts.model ?? facts.gatewayModel);
  return [
    style.bold(`Gatehouse chat — ${facts.resumed ? 'resumed' : 'new'} session ${facts.sessionId}`),
    `cwd: ${facts.cwd ?? '(default)'}`,
    `model: ${model}`,
    ...(facts.instructions ? [instructionsLine(facts.instructions)] : []),
    style.dim('Ctrl-C interrupts a running turn (twice when idle exits), Ctrl-D detaches.'),
    '',
  ].join('\n');
}

export function resumeHint(sessionId: string): string {
  return `Detached; the session stays alive. Resume it with: gatehouse chat --resume ${sessionId}\n`;
}
