/**
 * The `auth:` section (issue 30, docs/identity.md): what members may launch, and what the audit
 * trail keeps. Closed like every section: an unknown key is reported with its path.
 */
import { z } from 'zod';
import type { MemberLimits } from '../domain/auth/member-limits.js';
import { oidcSchema } from './config-oidc.js';

const names = (what: string) =>
  z
    .array(z.string({ error: `${what} must be a list of names` }).min(1, { error: `${what}: empty name` }), {
      error: `${what} must be a list of names`,
    })
    .min(1, { error: `${what} must name at least one (leave it out to allow all)` });

export const authSchema = z
  .strictObject({
    /** Launch limits of members' sessions, enforced at session.create and session.model. */
    members: z
      .strictObject({
        yolo: z.boolean({ error: 'auth.members.yolo must be true or false' }).default(false),
        safe_mode: z
          .enum(['allowed', 'forced'], { error: 'auth.members.safe_mode must be allowed or forced' })
          .default('allowed'),
        providers: names('auth.members.providers').optional(),
        models: names('auth.members.models').optional(),
      })
      .prefault({}),
    audit: z
      .strictObject({
        /** Whether audit rows of submissions and answers keep their text (off: who and when only). */
        message_text: z.boolean({ error: 'auth.audit.message_text must be true or false' }).default(false),
      })
      .prefault({}),
    /** Dashboard sign-in through an OpenID Connect provider (config-oidc.ts); absent: off. */
    oidc: oidcSchema.optional(),
  })
  .prefault({});

export type AuthConfig = z.output<typeof authSchema>;

/** The members' launch limits the domain applies. */
export function memberLimits(auth: AuthConfig): MemberLimits {
  return {
    yolo: auth.members.yolo,
    safe_mode: auth.members.safe_mode,
    providers: auth.members.providers ?? null,
    models: auth.members.models ?? null,
  };
}
