/**
 * A delegation's child policy (domain/delegations/policy.ts): the parent's frozen policy narrowed by
 * the request, never widened; each wider ask is refused by name.
 */
import { describe, expect, it } from 'vitest';
import { childLaunch } from '../../../src/domain/delegations/policy.js';
import type { LaunchPolicy } from '../../../src/domain/local/launch-policy.js';
import { GatewayError } from '../../../src/domain/errors.js';

const parent: LaunchPolicy = {
  source: 'cli',
  platform: 'cli',
  cwd: '/work/project',
  model: 'alpha-model',
  toolsets: ['terminal', 'clarify', 'delegation'],
  coding_context: null,
  provider: 'alpha',
  base_url: null,
  requires_api_key: false,
  reasoning: 'low',
  max_turns: 20,
  budget: { tokens: 5000, usd: null },
  skills: [],
  skills_prompt: null,
  yolo: false,
  checkpoints: true,
  accept_hooks: true,
  pass_session_id: false,
  ignore_rules: false,
  safe_mode: true,
  ignore_user_config: true,
  editor: null,
  title: 'the parent',
  hidden: false,
  mcp_servers: { profile: ['fs'], own: { notes: { command: 'notes-server', args: [] } as never } },
};

function refusal(request: Parameters<typeof childLaunch>[1], p: LaunchPolicy = parent): GatewayError {
  try {
    childLaunch(p, request, 'task', ['fs', 'web']);
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('expected a refusal');
}

describe('childLaunch', () => {
  it("gives the child the parent's policy when the request asks nothing: same cwd, model, guards and limits", () => {
    expect(childLaunch(parent, {}, 'look\nit   up', ['fs', 'web'])).toEqual({
      source: 'tool',
      cwd: '/work/project',
      model: 'alpha-model',
      provider: 'alpha',
      toolsets: ['terminal', 'clarify', 'delegation'],
      reasoning: 'low',
      max_turns: 20,
      budget: { tokens: 5000 },
      yolo: false,
      checkpoints: true,
      accept_hooks: true,
      ignore_rules: false,
      safe_mode: true,
      ignore_user_config: true,
      title: 'delegation: look it up',
      // A profile server the parent did not have (web) is left out; its own server goes along.
      mcp_servers: { web: { enabled: false }, notes: { command: 'notes-server', args: [] } },
    });
  });

  it('narrows: fewer toolsets and MCP servers, fewer max_turns, a title', () => {
    const child = childLaunch(
      parent,
      { toolsets: ['clarify'], mcp_servers: ['notes'], max_turns: 5, title: 'research' },
      'task',
      ['fs', 'web'],
    );
    expect(child).toMatchObject({ toolsets: ['clarify'], max_turns: 5, title: 'research' });
    expect(child.mcp_servers).toEqual({
      fs: { enabled: false },
      web: { enabled: false },
      notes: { command: 'notes-server', args: [] },
    });
  });

  it('refuses every wider ask by name', () => {
    expect(refusal({ toolsets: ['terminal', 'project'] }).details).toEqual({ field: 'toolsets' });
    expect(refusal({ yolo: true }).details).toEqual({ field: 'yolo' });
    expect(refusal({ safe_mode: false }).details).toEqual({ field: 'safe_mode' });
    expect(refusal({ model: 'beta-model' }).details).toEqual({ field: 'model' });
    expect(refusal({ provider: 'beta' }).details).toEqual({ field: 'provider' });
    expect(refusal({ max_turns: 21 }).details).toEqual({ field: 'max_turns' });
    expect(refusal({ mcp_servers: ['web'] }).details).toEqual({ field: 'mcp_servers' });
    expect(refusal({}, { ...parent, requires_api_key: true }).details).toEqual({ field: 'api_key' });
    expect(refusal({ yolo: true }).reason).toBe('delegation_too_wide');
  });

  it('allows what the parent has: yolo under a yolo parent, safe_mode off under a parent without it', () => {
    const free = { ...parent, yolo: true, safe_mode: false };
    expect(childLaunch(free, { yolo: true, safe_mode: false }, 't', [])).toMatchObject({
      yolo: true,
      safe_mode: false,
    });
    // Asking for less power than the parent has is always fine.
    expect(childLaunch(free, { yolo: false, safe_mode: true }, 't', [])).toMatchObject({
      yolo: false,
      safe_mode: true,
    });
  });
});
