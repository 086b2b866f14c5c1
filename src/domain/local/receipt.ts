/**
 * The private creation receipt of a local session (SPEC LOC-1, REC-1, LIN-1..3):
 * `gateway.local_policy.v1:<logical id>`, written in the same transaction as the session row and its
 * route. It binds the session to its creating principal and profile, records the request_id and the
 * frozen launch policy, and tracks the current physical transcript through an explicit lineage.
 *
 * Cold restart re-validates every receipt before anything runs; whatever does not agree fails closed.
 */
import { z } from 'zod';
import type { LaunchPolicy } from './launch-policy.js';

export const RECEIPT_KIND = 'gateway.local_policy.v1';

/**
 * The creation_digest of a receipt migration 029 scrubbed of MCP env and header values: the old
 * digest hashed them, so it went too. A repeat of that request_id is refused (the values are given
 * again with session.mcp.supply instead).
 */
export const DIGEST_SCRUBBED = 'scrubbed:mcp-values';

export function receiptKey(logicalId: string): string {
  return `${RECEIPT_KIND}:${logicalId}`;
}

const LOCAL_KEY_PREFIX = 'agent:main:local:dm:';

/** The routing key of a local session: the server-owned LOCAL platform, never the client's source. */
export function localSessionKey(logicalId: string): string {
  return `${LOCAL_KEY_PREFIX}${logicalId}`;
}

/** Whether a routing key is a local session's (its route is part of the session's identity). */
export function isLocalSessionKey(sessionKey: string): boolean {
  return sessionKey.startsWith(LOCAL_KEY_PREFIX);
}

/** The logical id whose route key this is, or null for a key that is not a local session's. */
export function logicalIdOfKey(sessionKey: string): string | null {
  return sessionKey.startsWith(LOCAL_KEY_PREFIX) ? sessionKey.slice(LOCAL_KEY_PREFIX.length) : null;
}

export interface OwnerRef {
  subject: string;
  provider: string;
}

export interface LineageStep {
  kind: 'compression' | 'reset';
  from: string;
  to: string;
  at: string;
  /** The request_id of the session.reset that made this step (its lost-ACK retry finds it here). */
  request_id?: string;
  /** A compression's way: a model's summary, or its oldest exchanges dropped (no usable summary). */
  method?: 'summary' | 'dropped';
  /** The messages a `dropped` compression left out, and why no summary was used (when one failed). */
  dropped?: number;
  summary_error?: string;
}

/** A change of the session's provider and model (session.model, issue 26 item 6). */
export interface ModelChange {
  from: { provider: string | null; model: string };
  to: { provider: string; model: string };
  at: string;
}

export interface CreationReceipt {
  kind: typeof RECEIPT_KIND;
  logical_id: string;
  /** The physical transcript currently backing the session. */
  current_session_id: string;
  owner: OwnerRef;
  profile: string;
  request_id: string | null;
  creation_digest: string;
  policy: LaunchPolicy;
  lineage: LineageStep[];
  /** Every change of provider and model since creation, oldest first (absent: none). */
  model_changes?: ModelChange[];
  created_at: string;
}

const receiptSchema = z.object({
  kind: z.literal(RECEIPT_KIND),
  logical_id: z.string().min(1),
  current_session_id: z.string().min(1),
  owner: z.object({ subject: z.string().min(1), provider: z.string().min(1) }),
  profile: z.string().min(1),
  request_id: z.string().nullable(),
  creation_digest: z.string().min(1),
  policy: z.looseObject({
    source: z.string(),
    cwd: z.string(),
    model: z.string(),
    toolsets: z.array(z.string()),
  }),
  lineage: z.array(
    z.object({
      kind: z.enum(['compression', 'reset']),
      from: z.string().min(1),
      to: z.string().min(1),
      at: z.string(),
      request_id: z.string().optional(),
      method: z.enum(['summary', 'dropped']).optional(),
      dropped: z.number().int().nonnegative().optional(),
      summary_error: z.string().optional(),
    }),
  ),
  model_changes: z
    .array(
      z.object({
        from: z.object({ provider: z.string().nullable(), model: z.string() }),
        to: z.object({ provider: z.string(), model: z.string() }),
        at: z.string(),
      }),
    )
    .optional(),
  created_at: z.string(),
});

export type ReceiptFailure =
  'missing' | 'malformed' | 'foreign_profile' | 'copied' | 'mismatched_route' | 'broken_lineage' | 'fork';

export type ReceiptCheck =
  { ok: true; receipt: CreationReceipt } | { ok: false; failure: ReceiptFailure; detail: string };

/** What the store holds about a local session, to check its receipt against. */
export interface ReceiptEvidence {
  logicalId: string;
  /** The receipt's raw stored text, or null when there is none. */
  raw: string | null;
  /** The physical session id the route of this session points at, or null without a route. */
  routedSessionId: string | null;
}

/** Validates a receipt against the store's evidence and the daemon's profile (REC-1, LIN-3). */
export function checkReceipt(evidence: ReceiptEvidence, profile: string): ReceiptCheck {
  if (evidence.raw === null) return { ok: false, failure: 'missing', detail: 'no creation receipt' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(evidence.raw);
  } catch {
    return { ok: false, failure: 'malformed', detail: 'receipt is not valid JSON' };
  }
  const result = receiptSchema.safeParse(parsed);
  if (!result.success) {
    const issue = result.error.issues[0];
    return {
      ok: false,
      failure: 'malformed',
      detail: `receipt ${issue?.path.join('.') || 'body'}: ${issue?.message}`,
    };
  }
  const receipt = result.data as unknown as CreationReceipt;
  if (receipt.logical_id !== evidence.logicalId) {
    return { ok: false, failure: 'copied', detail: `receipt belongs to session ${receipt.logical_id}` };
  }
  if (receipt.profile !== profile) {
    return {
      ok: false,
      failure: 'foreign_profile',
      detail: `receipt belongs to profile "${receipt.profile}"`,
    };
  }
  let expected = receipt.logical_id;
  for (const step of receipt.lineage) {
    if (step.from !== expected) {
      return {
        ok: false,
        failure: 'broken_lineage',
        detail: `${step.kind} step starts at ${step.from}, not ${expected}`,
      };
    }
    expected = step.to;
  }
  if (receipt.current_session_id !== expected) {
    return {
      ok: false,
      failure: 'broken_lineage',
      detail: `current transcript ${receipt.current_session_id} is not the lineage end ${expected}`,
    };
  }
  if (evidence.routedSessionId !== receipt.current_session_id) {
    return {
      ok: false,
      failure: 'mismatched_route',
      detail: `route points at ${evidence.routedSessionId ?? 'nothing'}, receipt at ${receipt.current_session_id}`,
    };
  }
  return { ok: true, receipt };
}
