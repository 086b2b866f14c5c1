/**
 * Sharing a session with a member (issue 30): an operator grants a member one of three levels on
 * one session, and may revoke it. The level bounds what the member may do there, per operation:
 * the dispatcher checks the method's capability against it on every call, so a change reaches live
 * connections at their next call. The receipt keeps its owner (AUTH-4); sharing never moves it.
 */
import type { Capability } from './principal.js';

export const SHARE_LEVELS = ['read', 'submit', 'full'] as const;
export type ShareLevel = (typeof SHARE_LEVELS)[number];

const LEVEL_CAPABILITIES: Record<ShareLevel, readonly Capability[]> = {
  /** Follow the session: resume, list, search, read its transcript and events. */
  read: ['session:read'],
  /** And send it prompts (each admission keeps its submitter). */
  submit: ['session:read', 'session:submit'],
  /** Everything its owner may do: controls, approvals, answers. */
  full: ['session:read', 'session:submit', 'session:control', 'session:approve', 'session:respond'],
};

export function levelAllows(level: ShareLevel, capability: Capability): boolean {
  return LEVEL_CAPABILITIES[level].includes(capability);
}

/** One stored share: who may use which session, at which level, granted by whom and when. */
export interface SessionShare {
  logical_id: string;
  /** The member's subject, e.g. `member:alice`. */
  member: string;
  level: ShareLevel;
  granted_by: string;
  granted_at: string;
}
