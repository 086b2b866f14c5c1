/**
 * What a line typed at an open prompt means. Pure: the chat controller asks, then calls
 * approval.respond / clarify.respond with the exact prompt_id and execution_generation.
 */

export type ApprovalChoice = 'once' | 'session' | 'always' | 'deny';

const APPROVAL_KEYS: Record<string, ApprovalChoice> = {
  o: 'once',
  once: 'once',
  y: 'once',
  yes: 'once',
  s: 'session',
  session: 'session',
  a: 'always',
  always: 'always',
  d: 'deny',
  deny: 'deny',
  n: 'deny',
  no: 'deny',
};

/**
 * The approval choice a line names, or null when it names none of the offered choices (the
 * question is asked again; an unclear answer must never approve anything).
 */
export function parseApprovalAnswer(line: string, offered: readonly string[]): ApprovalChoice | null {
  const choice = APPROVAL_KEYS[line.trim().toLowerCase()];
  return choice !== undefined && offered.includes(choice) ? choice : null;
}

/**
 * A clarify answer: a choice's number picks that choice, anything else is the answer in the
 * user's own words, and an empty line skips the question (the broker treats '' as skipped).
 */
export function parseClarifyAnswer(line: string, choices: readonly string[] | null): string {
  const text = line.trim();
  if (choices && /^\d+$/.test(text)) {
    const picked = choices[Number(text) - 1];
    if (picked !== undefined) return picked;
  }
  return text;
}
