/**
 * The `api_server` section (docs/integrations.md, "An OpenAI-compatible endpoint"): `GET /v1/models`
 * and `POST /v1/chat/completions` on the daemon's listener. Off unless the section names at least
 * one key; each key's value is read from the environment variable it names (never the file) and is
 * bound to a principal of its own (`api:<name>`) holding exactly the scopes listed.
 */
import { z } from 'zod';
import { CAPABILITIES, type Capability } from '../domain/auth/principal.js';
import { envName } from './config-providers.js';

const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

const keySchema = z.strictObject({
  /** The NAME of the variable holding the bearer key; the key itself is never in the file. */
  key_env: envName,
  /** What the key's principal may do: capability names (docs/glossary.md). */
  scopes: z
    .array(
      z.enum(CAPABILITIES as unknown as [Capability, ...Capability[]], {
        error: `must be capability names: ${CAPABILITIES.join(', ')}`,
      }),
      { error: 'must be a list of capability names' },
    )
    .min(1, {
      error: 'must name at least one capability, e.g. [session:create, session:read, session:submit]',
    }),
});

export const apiServerSchema = z
  .strictObject({
    enabled: z.boolean({ error: 'api_server.enabled must be true or false' }).default(true),
    keys: z.record(z.string(), keySchema).optional(),
    /**
     * How long a request waits while its turn waits for an approval before it is answered 409
     * `approval_pending` (the turn keeps waiting; the same Idempotency-Key picks up its answer).
     */
    approval_wait_s: z
      .number({ error: 'api_server.approval_wait_s must be a number of seconds' })
      .int({ error: 'api_server.approval_wait_s must be a whole number' })
      .min(0, { error: 'api_server.approval_wait_s must be 0 or more' })
      .max(3600, { error: 'api_server.approval_wait_s must be at most 3600' })
      .default(300),
  })
  .superRefine((section, ctx) => {
    for (const name of Object.keys(section.keys ?? {}))
      if (!KEY_NAME.test(name))
        ctx.addIssue({
          code: 'custom',
          path: ['keys', name],
          message:
            'key names must be 1 to 64 letters, digits, dashes or underscores (the principal is api:<name>)',
        });
    if (section.enabled && (section.keys === undefined || Object.keys(section.keys).length === 0))
      ctx.addIssue({
        code: 'custom',
        path: ['keys'],
        message:
          'names no key: give at least one (name: {key_env: VAR, scopes: [...]}), or set enabled: false',
      });
  })
  .optional();

export type ApiServerConfig = z.output<typeof apiServerSchema>;
