/**
 * The demo model's script: a pure function from a chat request to a reply. It is a scripted
 * stand-in, not a language model: it only recognises a few prefixes, so a new user can see every
 * Gatehouse feature with no account and tests can predict every answer.
 *
 *   run: <command>             → calls `terminal` with {"command": "<command>"}
 *   ask: <question> [a|b|c]    → calls `clarify` with the question (and choices, when given)
 *   call: <tool> [<json>]      → calls any offered tool by name (an MCP server's `fs__read_file`)
 *                                with the JSON object given (`{}` when none)
 *   think: <text>              → streams a reasoning delta first, then answers <text> by these rules
 *   a tool result last         → reports what the tool returned
 *   a compression request      → a deterministic summary (summary.ts)
 *   anything else              → echoes the user's text
 */
import { createHash } from 'node:crypto';
import { demoSummary, isSummaryRequest } from './summary.js';

export const DEMO_MODEL_ID = 'gatehouse-demo';
export const DEMO_LABEL = 'Demo model (scripted stand-in)';

export interface DemoToolCall {
  id: string;
  name: string;
  /** The arguments as the JSON text the model sends. */
  arguments: string;
}

export interface DemoReply {
  reasoning: string | null;
  text: string | null;
  toolCall: DemoToolCall | null;
}

interface RequestMessage {
  role?: unknown;
  content?: unknown;
  name?: unknown;
  tool_call_id?: unknown;
  tool_calls?: { id?: unknown; function?: { name?: unknown } }[];
}

export interface DemoRequestBody {
  messages?: RequestMessage[];
  tools?: { function?: { name?: unknown } }[];
  stream?: unknown;
  stream_options?: { include_usage?: unknown };
}

export function scriptReply(body: DemoRequestBody): DemoReply {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  if (isSummaryRequest(messages))
    return { reasoning: null, text: demoSummary(textOf(messages.at(-1)?.content)), toolCall: null };
  const last = messages[messages.length - 1];
  const offered = new Set(
    (Array.isArray(body.tools) ? body.tools : [])
      .map((t) => t.function?.name)
      .filter((n): n is string => typeof n === 'string'),
  );
  // Unique within a conversation, as a provider's are (a compression or reset shortens the
  // request, so its length alone would repeat an id), and still the same for the same request.
  const callId = `call_demo_${messages.length}_${createHash('sha256').update(JSON.stringify(messages)).digest('hex').slice(0, 8)}`;
  if (!last)
    return { reasoning: null, text: `${DEMO_LABEL}: there is no message to answer.`, toolCall: null };
  if (last.role === 'tool') {
    const name = toolNameOf(last, messages);
    return {
      reasoning: null,
      text: `${DEMO_LABEL}: the tool \`${name}\` returned:\n${textOf(last.content)}`,
      toolCall: null,
    };
  }
  if (last.role !== 'user') {
    return { reasoning: null, text: `${DEMO_LABEL}: the last message is not from the user.`, toolCall: null };
  }
  // A shared session renders the sender as `[name] ` in front of the text (KEY-3).
  let text = textOf(last.content)
    .replace(/^\[[^\]]*\]\s*/, '')
    .trim();
  let reasoning: string | null = null;
  const think = /^think:\s*/i.exec(text);
  if (think) {
    text = text.slice(think[0].length);
    reasoning = `The user asked me to think about: ${text}. I am a scripted stand-in, so I follow my script.`;
  }
  const run = /^run:\s*/i.exec(text);
  if (run) {
    const command = text.slice(run[0].length);
    if (!offered.has('terminal')) {
      return unavailable(reasoning, 'terminal', `run \`${command}\``);
    }
    return {
      reasoning,
      text: null,
      toolCall: { id: callId, name: 'terminal', arguments: JSON.stringify({ command }) },
    };
  }
  const ask = /^ask:\s*/i.exec(text);
  if (ask) {
    const { question, choices } = parseQuestion(text.slice(ask[0].length));
    if (!offered.has('clarify')) return unavailable(reasoning, 'clarify', `ask "${question}"`);
    const args = choices ? { question, choices } : { question };
    return {
      reasoning,
      text: null,
      toolCall: { id: callId, name: 'clarify', arguments: JSON.stringify(args) },
    };
  }
  const call = /^call:\s*(\S+)\s*([\s\S]*)$/i.exec(text);
  if (call) {
    const [, name, raw] = call as unknown as [string, string, string];
    if (!offered.has(name)) return unavailable(reasoning, name, `call \`${name}\``);
    return {
      reasoning,
      text: null,
      // The arguments are sent as written: a model may send JSON that is not valid, too.
      toolCall: { id: callId, name, arguments: raw.trim() === '' ? '{}' : raw.trim() },
    };
  }
  return { reasoning, text: `${DEMO_LABEL}: you said: ${text}`, toolCall: null };
}

function unavailable(reasoning: string | null, tool: string, what: string): DemoReply {
  return {
    reasoning,
    text: `${DEMO_LABEL}: I would ${what}, but the \`${tool}\` tool is not available in this session.`,
    toolCall: null,
  };
}

/** `Which one? [a|b|c]` → the question and its choices. */
function parseQuestion(raw: string): { question: string; choices: string[] | null } {
  const match = /^(.*?)\s*\[([^\]]*\|[^\]]*)\]\s*$/.exec(raw);
  if (!match) return { question: raw.trim(), choices: null };
  const choices = match[2]!
    .split('|')
    .map((c) => c.trim())
    .filter((c) => c !== '');
  return { question: match[1]!.trim(), choices };
}

function toolNameOf(message: RequestMessage, messages: RequestMessage[]): string {
  if (typeof message.name === 'string' && message.name) return message.name;
  for (const m of messages) {
    for (const call of m.tool_calls ?? []) {
      if (call.id === message.tool_call_id && typeof call.function?.name === 'string')
        return call.function.name;
    }
  }
  return 'unknown';
}

/** Message content as text: a string, or the text parts of a content array. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : ''))
      .join('');
  }
  return '';
}

/** Splits text into the pieces the demo streams: each word with the spaces after it. */
export function tokenize(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
}

/** A rough token count (4 characters a token), good enough to exercise the usage counters. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
