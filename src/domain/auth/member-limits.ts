/**
 * The launch limits an operator sets for members (`auth.members`, issue 30): what a member's
 * session.create may ask for. Applied before the policy is frozen, so the receipt records the
 * limited policy; a refused option is `member_limit`, naming the field, and nothing is created.
 * Operators are not limited.
 */
import { GatewayError } from '../errors.js';
import type { CreateSessionParams } from '../local/launch-params.js';

export interface MemberLimits {
  /** Whether a member may ask for yolo (no approvals). */
  yolo: boolean;
  /** `forced`: every member session runs in safe mode, asked for or not. */
  safe_mode: 'allowed' | 'forced';
  /** The configured providers a member may choose; null: any of them. */
  providers: readonly string[] | null;
  /** The models a member may choose; null: any the provider lists. */
  models: readonly string[] | null;
}

export const NO_MEMBER_LIMITS: MemberLimits = {
  yolo: true,
  safe_mode: 'allowed',
  providers: null,
  models: null,
};

function refuse(field: string, message: string): never {
  throw new GatewayError('member_limit', message, { field });
}

/** The provider and model a member's choice resolves to must be allowed (creation and session.model). */
export function checkMemberModel(limits: MemberLimits, provider: string | null, model: string): void {
  if (limits.providers !== null && (provider === null || !limits.providers.includes(provider)))
    refuse(
      'provider',
      `members may use the providers ${limits.providers.join(', ')} (auth.members.providers), not "${provider ?? 'their own base_url'}"`,
    );
  if (limits.models !== null && !limits.models.includes(model))
    refuse(
      'model',
      `members may use the models ${limits.models.join(', ')} (auth.members.models), not "${model}"`,
    );
}

/** A member's creation params with the limits applied (forced safe mode set), or a refusal. */
export function limitMemberLaunch(params: CreateSessionParams, limits: MemberLimits): CreateSessionParams {
  if (params.yolo === true && !limits.yolo)
    refuse('yolo', 'members may not start sessions in yolo mode (auth.members.yolo is false)');
  // An endpoint of one's own would escape the provider list and point the gateway at any URL.
  if (params.base_url !== undefined)
    refuse('base_url', 'members choose among the configured providers; base_url is for operators');
  if (limits.safe_mode === 'forced') {
    if (params.safe_mode === false)
      refuse('safe_mode', 'member sessions run in safe mode (auth.members.safe_mode is forced)');
    return { ...params, safe_mode: true };
  }
  return params;
}
