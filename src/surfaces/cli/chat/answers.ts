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

/** The single keys that answer an approval offering `offered` (a terminal takes them without Enter). */
export function approvalKeys(offered: readonly string[]): string[] {
  return Object.entries(APPROVAL_KEYS)
    .filter(([key, choice]) => key.length === 1 && offered.includes(choice))
    .map(([key]) => key);
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

/** An open prompt as the chat holds it (an approval.request or clarify.request event). */
export interface OpenPrompt {
  type: string;
  [field: string]: unknown;
}

export type PromptReply =
  | { kind: 'respond'; method: 'approval.respond' | 'clarify.respond'; params: Record<string, unknown> }
  | { kind: 'ask_again'; hint: string };

/** The RPC call a line makes at an open prompt, naming its exact prompt_id and generation. */
export function promptReply(sessionId: string, prompt: OpenPrompt, line: string): PromptReply {
  const base = {
    session_id: sessionId,
    execution_generation: prompt['execution_generation'],
    prompt_id: prompt['prompt_id'],
  };
  if (prompt.type === 'approval.request') {
    const offered = (prompt['choices'] as string[] | undefined) ?? ['once', 'deny'];
    const choice = parseApprovalAnswer(line, offered);
    if (choice === null)
      return { kind: 'ask_again', hint: `Please answer ${offered.map((c) => c[0]).join(', ')}: ` };
    return { kind: 'respond', method: 'approval.respond', params: { ...base, choice } };
  }
  const choices = (prompt['choices'] as string[] | null | undefined) ?? null;
  return {
    kind: 'respond',
    method: 'clarify.respond',
    params: { ...base, answer: parseClarifyAnswer(line, choices) },
  };
}
