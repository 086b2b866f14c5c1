/**
 * What `session.create` may ask for (SPEC LOC-4..6): the closed schema of its parameters, the client
 * surfaces it names, and the one refusal a launch request can earn (LaunchPolicyError). A leaf: the
 * policy (launch-policy.ts) and the context it freezes (launch-context.ts) both read it.
 */
import { z } from 'zod';
import { GatewayError } from '../errors.js';
import { MCP_SESSION_SERVERS_SCHEMA } from '../../runtime/mcp/config.js';

/** Client surfaces and the agent platform each one runs as (LOC-4). */
export const LOCAL_SOURCES = {
  cli: 'cli',
  tui: 'tui',
  gui: 'desktop',
  acp: 'acp',
  api: 'api',
  tool: 'cli',
  oneshot: 'cli',
} as const;
export type LocalSource = keyof typeof LOCAL_SOURCES;

/** Sources whose sessions human pickers hide (they keep their own stored label). */
export const MACHINE_SOURCES: readonly LocalSource[] = ['tool', 'oneshot'];

export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high'] as const;

const nonEmpty = z.string().trim().min(1);

/** The `session.create` parameters: a closed object, every unknown key is rejected by name. */
export const createSessionParams = z
  .object({
    request_id: z.string().min(1).max(200).optional(),
    source: z.enum(Object.keys(LOCAL_SOURCES) as [LocalSource, ...LocalSource[]]).optional(),
    cwd: nonEmpty.optional(),
    model: nonEmpty.max(200).optional(),
    toolsets: z.array(nonEmpty).max(64).optional(),
    provider: nonEmpty.max(100).optional(),
    base_url: nonEmpty.optional(),
    api_key: z.string().min(1).max(4096).optional(),
    reasoning: z.enum(REASONING_EFFORTS).optional(),
    max_turns: z.number().int().min(1).max(1000).optional(),
    /** The session's own budget (docs/cost.md): lower than the profile's `budgets.session`, never above. */
    budget: z
      .strictObject({
        tokens: z.number().int().min(1).optional(),
        usd: z.number().positive().optional(),
      })
      .refine((b) => b.tokens !== undefined || b.usd !== undefined, {
        error: 'budget must name tokens, usd or both',
      })
      .optional(),
    skills: z.array(nonEmpty.max(100)).max(32).optional(),
    yolo: z.boolean().optional(),
    checkpoints: z.boolean().optional(),
    accept_hooks: z.boolean().optional(),
    pass_session_id: z.boolean().optional(),
    ignore_rules: z.boolean().optional(),
    safe_mode: z.boolean().optional(),
    ignore_user_config: z.boolean().optional(),
    editor: nonEmpty.max(200).optional(),
    title: nonEmpty.max(200).optional(),
    hidden: z.boolean().optional(),
    /** MCP servers of the session's own, or profile servers left out (docs/integrations.md). */
    mcp_servers: MCP_SESSION_SERVERS_SCHEMA.optional(),
  })
  .strict();
export type CreateSessionParams = z.infer<typeof createSessionParams>;

/** A launch request that breaks a rule: always `invalid_params`, naming the field. */
export class LaunchPolicyError extends GatewayError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super('invalid_params', message, { field });
  }
}
