/**
 * The one decision every approval takes (issue 25): given the configured mode, whether the session
 * runs without approvals (yolo), and what is known about the request, does it run, ask a human, or
 * get refused without asking? Pure, so the table of modes is tested without a daemon.
 *
 * - default: runs unasked only what the allow-list proved safe; everything else asks.
 * - detect: best-effort, today's deny-list: asks only for what the detector recognises as dangerous.
 * - deny: what would ask is refused without asking, in yolo sessions too.
 * - off: never asks (the whole gateway runs as yolo).
 * `manual` is the former name of `default` and is read as it.
 */
export const APPROVAL_MODES = ['default', 'detect', 'deny', 'off'] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];

/** Accepted in config for compatibility, read as the mode named. */
export const APPROVAL_MODE_ALIASES: Readonly<Record<string, ApprovalMode>> = { manual: 'default' };

export interface DecisionInput {
  mode: ApprovalMode;
  /** The session runs without approvals. */
  yolo: boolean;
  /** The allow-list proved the command safe. */
  allowListed: boolean;
  /** The detector recognised a danger (an edit counts as flagged: it always changes a file). */
  flagged: boolean;
}

export type Decision = 'run' | 'ask' | 'refuse';

export function decideApproval(input: DecisionInput): Decision {
  if (input.allowListed || input.mode === 'off') return 'run';
  // The operator's `deny` wins over a session's yolo: the config is the wider word.
  if (input.mode === 'deny') return 'refuse';
  if (input.yolo) return 'run';
  return input.mode === 'detect' && !input.flagged ? 'run' : 'ask';
}
