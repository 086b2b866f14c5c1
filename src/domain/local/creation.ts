/**
 * Creating a local session (SPEC LOC-2, LOC-3): the frozen launch policy and the private creation
 * receipt, committed with the session's row in one transaction. A repeated request_id returns the
 * session it made (or invalid_params when the fields differ); a repeated title without one returns
 * the titled session.
 */
import { randomBytes } from 'node:crypto';
import { auditRowFor, type AuditDraft } from '../ports/access-store.js';
import type { LocalSessionRow, LocalSessionStore } from '../ports/local-store.js';
import { isMember, type Principal } from '../auth/principal.js';
import { checkMemberModel, limitMemberLaunch, type MemberLimits } from '../auth/member-limits.js';
import { GatewayError } from '../errors.js';
import type { TypedEmitter } from '../events/typed-emitter.js';
import { newSessionId } from '../session/lifecycle.js';
import { SessionSource } from '../session/source.js';
import { ownerOf } from './access.js';
import type { CreateSessionParams } from './launch-params.js';
import {
  creationDigest,
  freezeLaunchPolicy,
  type LaunchDefaults,
  type LaunchLookups,
} from './launch-policy.js';
import { DIGEST_SCRUBBED, RECEIPT_KIND, type CreationReceipt } from './receipt.js';
import type { ReceiptGate } from './receipt-gate.js';
import type { LocalEvents } from './events.js';
import { heldFor, heldValuesOf, type HeldMcpValues } from '../../runtime/mcp/values.js';
import type { McpValueStore } from './mcp-values.js';

export interface CreationContext {
  store: LocalSessionStore;
  receipts: ReceiptGate;
  /** LOC-5: api keys live only in the daemon's memory. */
  apiKeys: Map<string, string>;
  /** The values of the sessions' own MCP servers' env and headers: memory only, as api keys. */
  mcpValues: McpValueStore;
  events: TypedEmitter<LocalEvents>;
  launchDefaults: LaunchDefaults;
  launchLookups: LaunchLookups;
  /** What members may ask for (auth.members); absent: members are limited like operators. */
  memberLimits?: MemberLimits | undefined;
}

/** The session row to answer session.create with: a new one, or the one this request already made. */
export async function createLocalSession(
  ctx: CreationContext,
  principal: Principal,
  asked: CreateSessionParams,
  /** The call's audit row, committed with the session (issue 30). */
  audit?: AuditDraft,
  /**
   * The MCP values to hold for the session instead of those in `asked` (a delegation's child holds
   * its parent's; a job's run none: their stored launches never carry any).
   */
  held?: HeldMcpValues,
): Promise<LocalSessionRow> {
  const limits = isMember(principal) ? ctx.memberLimits : undefined;
  const params = limits ? limitMemberLaunch(asked, limits) : asked;
  const owner = ownerOf(principal);
  const digest = creationDigest(params);
  if (params.request_id !== undefined) {
    const existing = await ctx.store.findByRequest(owner, principal.profile, params.request_id);
    if (existing) return repeatCreation(ctx, existing, digest, params, held);
  } else if (params.title !== undefined) {
    const titled = await ctx.store.findByTitle(owner, principal.profile, params.title);
    if (titled && (await ctx.receipts.ensure(titled.logical_id))) return titled;
  }
  const policy = freezeLaunchPolicy(params, ctx.launchDefaults, ctx.launchLookups);
  if (limits) checkMemberModel(limits, policy.provider, policy.model);
  const now = new Date();
  const logicalId = newSessionId(now, randomBytes(4).toString('hex'));
  const receipt: CreationReceipt = {
    kind: RECEIPT_KIND,
    logical_id: logicalId,
    current_session_id: logicalId,
    owner,
    profile: principal.profile,
    request_id: params.request_id ?? null,
    creation_digest: digest,
    policy,
    lineage: [],
    created_at: now.toISOString(),
  };
  const origin = new SessionSource({
    platform: 'local',
    chat_id: logicalId,
    chat_name: policy.title,
  }).toJSON();
  // Held before the commit, so values past a limit (mcp-values.ts) refuse the creation before anything
  // is written; let go again when no session of this id comes of it.
  ctx.mcpValues.hold(logicalId, heldFor(held ?? askedValues(params), policy.mcp_servers?.own ?? {}));
  let result: Awaited<ReturnType<LocalSessionStore['commitCreation']>>;
  try {
    result = await ctx.store.commitCreation({
      receipt,
      origin,
      title: policy.title,
      hidden: policy.hidden,
      audit: auditRowFor(audit, logicalId),
    });
  } catch (error) {
    ctx.mcpValues.forget(logicalId);
    throw error;
  }
  if (result.kind === 'existing') {
    ctx.mcpValues.forget(logicalId);
    return repeatCreation(ctx, result.session, digest, params, held);
  }
  if (audit) audit.recorded = true;
  ctx.receipts.admit(receipt);
  if (params.api_key !== undefined) ctx.apiKeys.set(logicalId, params.api_key);
  ctx.events.emit('session:created', { logical_id: logicalId, request_id: receipt.request_id });
  return result.session;
}

/** LOC-3: the same request_id returns the same identity, or invalid_params when fields differ. */
async function repeatCreation(
  ctx: CreationContext,
  existing: LocalSessionRow,
  digest: string,
  params: CreateSessionParams,
  held: HeldMcpValues | undefined,
): Promise<LocalSessionRow> {
  if (!(await ctx.receipts.ensure(existing.logical_id))) {
    throw new GatewayError(
      'permission_denied',
      `session ${existing.logical_id} is paused: its receipt is invalid`,
      {
        session_id: existing.logical_id,
      },
    );
  }
  const receipt = ctx.receipts.get(existing.logical_id)!;
  if (receipt.creation_digest === DIGEST_SCRUBBED) {
    throw new GatewayError(
      'invalid_params',
      `request_id ${JSON.stringify(params.request_id)} made session ${existing.logical_id}, whose stored request was scrubbed of its MCP servers' env and header values (an upgrade): give those values with session.mcp.supply instead of repeating session.create`,
      { request_id: params.request_id, session_id: existing.logical_id },
    );
  }
  if (receipt.creation_digest !== digest) {
    throw new GatewayError(
      'invalid_params',
      `request_id ${JSON.stringify(params.request_id)} was already used with different fields`,
      { request_id: params.request_id, session_id: existing.logical_id },
    );
  }
  // A retry may bring the api_key back after a restart (it is never stored), unless the session
  // was moved off the endpoint the key was for (session.model): it then goes nowhere.
  if (params.api_key !== undefined && receipt.policy.requires_api_key)
    ctx.apiKeys.set(existing.logical_id, params.api_key);
  // So may the own MCP servers' values: the digest matched, so the servers and the names are the same.
  ctx.mcpValues.hold(
    existing.logical_id,
    heldFor(held ?? askedValues(params), receipt.policy.mcp_servers?.own ?? {}),
  );
  return existing;
}

/** The env and header values of the own MCP servers a session.create names. */
function askedValues(params: CreateSessionParams): HeldMcpValues {
  const own = Object.fromEntries(
    Object.entries(params.mcp_servers ?? {}).flatMap(([name, server]) =>
      'command' in server || 'url' in server ? [[name, server] as const] : [],
    ),
  );
  return heldValuesOf(own);
}
