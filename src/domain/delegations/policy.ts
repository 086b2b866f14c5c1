/**
 * A delegation's child policy (issue 28, docs/scheduling.md "Background delegations"): the parent's
 * frozen launch policy, narrowed by what the request asks, never widened. Pure: the parent's policy
 * and the request in, the child's `session.create` parameters (or a refusal naming the field) out.
 *
 * Narrower or equal means: the same working directory, provider and model; the same or fewer
 * toolsets and MCP servers; no yolo unless the parent has it; safe mode, checkpoints, hooks, rules
 * and personal instructions as the parent has them; at most the parent's max_turns and budget.
 */
import { GatewayError } from '../errors.js';
import type { CreateSessionParams } from '../local/launch-params.js';
import type { LaunchPolicy } from '../local/launch-policy.js';

/** What a delegation may ask of its child; every field absent: the parent's. */
export interface ChildRequest {
  toolsets?: string[] | undefined;
  mcp_servers?: string[] | undefined;
  yolo?: boolean | undefined;
  safe_mode?: boolean | undefined;
  model?: string | undefined;
  provider?: string | undefined;
  max_turns?: number | undefined;
  title?: string | undefined;
}

function tooWide(field: string, message: string): GatewayError {
  return new GatewayError('delegation_too_wide', message, { field });
}

/** The parent's policy's MCP servers by name: the profile's it kept and its own. */
function mcpNames(parent: LaunchPolicy): string[] {
  const servers = parent.mcp_servers;
  if (!servers) return [];
  return [...servers.profile, ...Object.keys(servers.own).filter((n) => !servers.profile.includes(n))];
}

/**
 * The child's creation parameters, or delegation_too_wide naming the first field that asks for more
 * than the parent has. `profileMcp`: the profile's MCP servers enabled now (a child leaves out those
 * its parent did not have, whatever was enabled since).
 */
export function childLaunch(
  parent: LaunchPolicy,
  request: ChildRequest,
  task: string,
  profileMcp: readonly string[],
): CreateSessionParams {
  if (parent.requires_api_key) {
    throw tooWide(
      'api_key',
      'this session runs on an api_key only its creator holds: its delegations could not use it',
    );
  }
  const toolsets = request.toolsets ?? parent.toolsets;
  const extra = toolsets.filter((t) => !parent.toolsets.includes(t));
  if (extra.length > 0) {
    throw tooWide(
      'toolsets',
      `the parent session has no toolset ${extra.join(', ')}: a delegation gets the same or fewer (it has ${parent.toolsets.join(', ') || 'none'})`,
    );
  }
  if (request.yolo === true && !parent.yolo)
    throw tooWide('yolo', 'the parent session asks for approvals: its delegation may not run in yolo');
  if (request.safe_mode === false && parent.safe_mode)
    throw tooWide('safe_mode', 'the parent session runs in safe mode: its delegation does too');
  if (request.model !== undefined && request.model !== parent.model)
    throw tooWide('model', `a delegation runs on its parent's model (${parent.model})`);
  if (request.provider !== undefined && request.provider !== parent.provider)
    throw tooWide(
      'provider',
      `a delegation runs on its parent's provider (${parent.provider ?? 'its base_url'})`,
    );
  if (request.max_turns !== undefined && request.max_turns > parent.max_turns) {
    throw tooWide(
      'max_turns',
      `max_turns ${request.max_turns} is above the parent session's ${parent.max_turns}`,
    );
  }
  const parentMcp = mcpNames(parent);
  const mcp = request.mcp_servers ?? parentMcp;
  const unknownMcp = mcp.filter((n) => !parentMcp.includes(n));
  if (unknownMcp.length > 0) {
    throw tooWide(
      'mcp_servers',
      `the parent session has no MCP server ${unknownMcp.join(', ')}: a delegation gets the same or fewer`,
    );
  }
  // Every profile server the child is not to have is left out by name; the parent's own go along.
  const mcpServers: NonNullable<CreateSessionParams['mcp_servers']> = {};
  for (const name of profileMcp)
    if (!mcp.includes(name) || parent.mcp_servers?.own[name]) mcpServers[name] = { enabled: false };
  for (const [name, server] of Object.entries(parent.mcp_servers?.own ?? {}))
    if (mcp.includes(name)) mcpServers[name] = server;
  const budget = parent.budget;
  return {
    source: 'tool',
    cwd: parent.cwd,
    model: parent.model,
    ...(parent.provider !== null ? { provider: parent.provider } : {}),
    ...(parent.base_url !== null ? { base_url: parent.base_url } : {}),
    toolsets: [...toolsets],
    ...(parent.reasoning !== null ? { reasoning: parent.reasoning } : {}),
    max_turns: request.max_turns ?? parent.max_turns,
    ...(budget && (budget.tokens !== null || budget.usd !== null)
      ? {
          budget: {
            ...(budget.tokens !== null ? { tokens: budget.tokens } : {}),
            ...(budget.usd !== null ? { usd: budget.usd } : {}),
          },
        }
      : {}),
    ...(parent.skills.length > 0 ? { skills: [...parent.skills] } : {}),
    yolo: request.yolo ?? parent.yolo,
    checkpoints: parent.checkpoints,
    accept_hooks: parent.accept_hooks,
    ignore_rules: parent.ignore_rules,
    safe_mode: request.safe_mode ?? parent.safe_mode,
    ignore_user_config: parent.ignore_user_config,
    title: request.title ?? `delegation: ${task.replace(/\s+/g, ' ').slice(0, 80)}`,
    ...(Object.keys(mcpServers).length > 0 ? { mcp_servers: mcpServers } : {}),
  };
}
