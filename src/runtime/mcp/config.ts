/**
 * MCP servers as toolsets (issue 27): the shape of one server, as `config.yaml` (`mcp_servers:`)
 * and `session.create` (`mcp_servers`) both write it, checked as a closed schema.
 *
 * server      One Model Context Protocol server: a command the gateway starts and talks to over
 *             stdin/stdout (`command`), or a Streamable HTTP endpoint (`url`).
 * server tool One tool a server lists; the model sees it as `<server>__<tool>`.
 * approval    Whether a call asks a human: `always`, `never`, or `detect` (ask unless the server
 *             annotates the tool `readOnlyHint: true`), per server and per tool.
 */
import { z } from 'zod';

export const MCP_APPROVALS = ['always', 'never', 'detect'] as const;
export type McpApproval = (typeof MCP_APPROVALS)[number];

/** A server's name: it prefixes its tools' names, so it may not contain the `__` separator. */
export const MCP_SERVER_NAME = /^(?=.{1,32}$)[a-z][a-z0-9-]*(?:_[a-z0-9-]+)*$/;
export const MCP_TOOL_SEPARATOR = '__';
export const MCP_TIMEOUT_DEFAULT_S = 60;

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be environment variable names' });
const noNul = z.string().refine((v) => !v.includes('\0'), { error: 'must not contain NUL characters' });
const approval = z.enum(MCP_APPROVALS, { error: 'must be always, never or detect' });

const common = {
  enabled: z.boolean({ error: 'must be true or false' }).default(true),
  tools: z
    .strictObject({
      /** Only these server tools (by the server's own name); all when absent. */
      include: z.array(z.string().min(1)).min(1).optional(),
      /** Never these server tools. */
      exclude: z.array(z.string().min(1)).default([]),
      /** Per server tool (the server's own name): overrides the server's `approval`. */
      approval: z.record(z.string().min(1), approval).default({}),
    })
    .prefault({}),
  /** Starting the server, and each call: past it the call ends with a tool error. */
  timeout_s: z
    .number({ error: 'must be a number of seconds' })
    .positive({ error: 'must be more than 0' })
    .max(3600, { error: 'must be at most 3600 seconds' })
    .default(MCP_TIMEOUT_DEFAULT_S),
  /** For every tool of the server: `detect` asks unless the tool is annotated read-only. */
  approval: approval.default('detect'),
};

const stdioServer = z.strictObject({
  command: z.string({ error: 'must be the program to run' }).trim().min(1),
  args: z.array(noNul).default([]),
  /** Added to the tool environment (docs/tool-reach.md) the server gets. */
  env: z
    .record(
      envName.refine((n) => !n.toUpperCase().startsWith('GATEHOUSE_'), {
        error: "GATEHOUSE_ variables are the gateway's own and are never given to tools",
      }),
      noNul,
    )
    .default({}),
  /** Where the server runs: an absolute path; the session's cwd when absent. */
  cwd: z.string().startsWith('/', { error: 'must be an absolute path' }).optional(),
  ...common,
});

const httpServer = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }),
  headers: z.record(z.string().min(1), noNul).default({}),
  ...common,
});

const SERVER_SHAPE =
  'must be a stdio server ({command, args, env, cwd}) or a Streamable HTTP server ({url, headers}), each with enabled, tools, timeout_s, approval';

export const MCP_SERVER_SCHEMA = z.union([stdioServer, httpServer], { error: SERVER_SHAPE });

/** Server names are checked here, not as record keys, so the refusal names the server and the rule. */
function checkNames(servers: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const names = Object.keys(servers);
  if (names.length > 32) ctx.addIssue({ code: 'custom', message: 'at most 32 servers' });
  for (const name of names)
    if (!MCP_SERVER_NAME.test(name))
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: `"${name}" is not a server name: use lower-case letters, digits, - and single _ (never __), at most 32 characters`,
      });
}

export const MCP_SERVERS_SCHEMA = z.record(z.string(), MCP_SERVER_SCHEMA).superRefine(checkNames);

export type McpServerConfig = z.output<typeof MCP_SERVER_SCHEMA>;
export type McpServersConfig = z.output<typeof MCP_SERVERS_SCHEMA>;

export function isStdio(server: McpServerConfig): server is Extract<McpServerConfig, { command: string }> {
  return 'command' in server;
}

/** How a call of this server tool is approved: the per-tool setting, else the server's. */
export function approvalOf(server: McpServerConfig, tool: string): McpApproval {
  return server.tools.approval[tool] ?? server.approval;
}

/** Whether the server's tool `tool` is offered to the model (include / exclude). */
export function offersTool(server: McpServerConfig, tool: string): boolean {
  if (server.tools.exclude.includes(tool)) return false;
  return server.tools.include === undefined || server.tools.include.includes(tool);
}

/**
 * `session.create`'s `mcp_servers`: servers of the session's own, by name (a profile server of the
 * same name is replaced), or `{enabled: false}` to leave a profile server out.
 */
export const MCP_SESSION_SERVERS_SCHEMA = z
  .record(
    z.string(),
    z.union([z.strictObject({ enabled: z.literal(false) }), MCP_SERVER_SCHEMA], {
      error: `${SERVER_SHAPE}, or {enabled: false} to leave a profile server out`,
    }),
  )
  .superRefine(checkNames);

export type McpSessionServers = z.output<typeof MCP_SESSION_SERVERS_SCHEMA>;
