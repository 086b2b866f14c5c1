/**
 * The demo model's answer to a compression request (runtime/context/summary-prompt.ts): a summary
 * built by fixed rules from the request, so tests can assert what a summary keeps. It fills the
 * template as a real model would be asked to, and UPDATES a previous summary: its items are kept,
 * the new messages add theirs.
 */
import {
  CONVERSATION_CLOSE,
  CONVERSATION_OPEN,
  PREVIOUS_SUMMARY_CLOSE,
  PREVIOUS_SUMMARY_OPEN,
  SUMMARY_REQUEST_MARKER,
  SUMMARY_SECTIONS,
} from '../context/summary-prompt.js';

/** At most this many items per section, the newest kept (a summary must stay small). */
const MAX_ITEMS = 12;
const FILE_LIKE = /(?:[\w.-]*\/[\w./-]+|\b[\w-]+\.(?:ts|js|json|md|py|txt|ya?ml|sh|sql|toml|rs|go))\b/g;

export function isSummaryRequest(messages: readonly { role?: unknown; content?: unknown }[]): boolean {
  const first = messages[0];
  return (
    first?.role === 'system' &&
    typeof first.content === 'string' &&
    first.content.startsWith(SUMMARY_REQUEST_MARKER)
  );
}

type Sections = Map<string, string[]>;

function parseSummary(text: string): Sections {
  const sections: Sections = new Map(SUMMARY_SECTIONS.map((s) => [s, []]));
  let current: string[] | null = null;
  for (const line of text.split('\n')) {
    const heading = /^##\s+(.+?)\s*$/.exec(line);
    if (heading) {
      current = sections.get(heading[1]!) ?? null;
      continue;
    }
    const item = /^-\s+(.+)$/.exec(line.trim());
    if (current && item && item[1] !== 'none') current.push(item[1]!);
  }
  return sections;
}

function between(text: string, open: string, close: string): string | null {
  const start = text.indexOf(open);
  const end = text.indexOf(close, start + open.length);
  return start < 0 || end < 0 ? null : text.slice(start + open.length, end).trim();
}

function short(text: string, max = 100): string {
  // ⏎ as an escape: the CLI's bundle is ASCII only (scripts/bundle.js).
  const flat = text.replace(/\s*\u23CE\s*/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

function add(sections: Sections, name: string, item: string): void {
  const list = sections.get(name)!;
  if (!list.includes(item)) list.push(item);
}

/** The deterministic summary for the user message of a compression request. */
export function demoSummary(request: string): string {
  const previous = between(request, PREVIOUS_SUMMARY_OPEN, PREVIOUS_SUMMARY_CLOSE);
  const sections = parseSummary(previous ?? '');
  const conversation = between(request, CONVERSATION_OPEN, CONVERSATION_CLOSE) ?? '';
  let lastUser: string | null = null;
  for (const line of conversation.split('\n')) {
    const match = /^\[([^\]]+)\]\s?(.*)$/.exec(line);
    if (!match) continue;
    const [, who, text] = match as unknown as [string, string, string];
    if (who.startsWith('user')) {
      if (sections.get('Goal')!.length === 0) add(sections, 'Goal', short(text));
      if (/\b(must|never|always|do not|don't)\b/i.test(text)) add(sections, 'Constraints', short(text));
      add(sections, 'Done', `user asked: ${short(text)}`);
      lastUser = text;
    } else if (who.startsWith('assistant calls ')) {
      add(sections, 'Done', `called ${who.slice('assistant calls '.length)} with ${short(text, 80)}`);
    }
    for (const file of text.match(FILE_LIKE) ?? []) add(sections, 'Files and identifiers', file);
  }
  const progress = sections.get('In progress')!;
  if (lastUser !== null) progress.splice(0, progress.length, `answering: ${short(lastUser)}`);
  if (sections.get('Next steps')!.length === 0)
    add(sections, 'Next steps', 'carry on from the most recent messages');
  return SUMMARY_SECTIONS.map((name) => {
    const items = sections.get(name)!.slice(-MAX_ITEMS);
    return [`## ${name}`, ...(items.length > 0 ? items.map((i) => `- ${i}`) : ['- none'])].join('\n');
  }).join('\n\n');
}
