import { describe, expect, it } from 'vitest';
import {
  createSessionParams,
  LaunchPolicyError,
  type CreateSessionParams,
} from '../../../src/domain/local/launch-params.js';
import {
  creationContract,
  creationDigest,
  freezeLaunchPolicy,
  type LaunchDefaults,
  type LaunchLookups,
} from '../../../src/domain/local/launch-policy.js';
import { emptyLookups } from '../../fixtures/launch-fixtures.js';

const defaults: LaunchDefaults = {
  cwd: '/home/me',
  model: 'gatehouse-demo',
  toolsets: ['terminal', 'clarify'],
  knownToolsets: ['terminal', 'clarify', 'project', 'desktop_ui', 'catalog'],
  maxTurns: 50,
  providers: {
    defaultProvider: 'default',
    names: ['default', 'openrouter', 'plain'],
    defaultModel: (name) => `${name}-model`,
    acceptsReasoning: (name) => name !== 'plain',
  },
  offerSkills: false,
};
const lookups: LaunchLookups = emptyLookups({
  isDirectory: (p) => ['/home/me', '/work/app', '/work/notes'].includes(p),
  isCodeWorkspace: (p) => p === '/work/app',
  readSkill: (name) =>
    name === 'review'
      ? { name, description: 'Reviews code', path: '/h/skills/review/SKILL.md', body: 'Review carefully.\n' }
      : null,
});

function freeze(params: unknown) {
  return freezeLaunchPolicy(createSessionParams.parse(params), defaults, lookups);
}
function rejection(params: unknown): { field: string; message: string } | string {
  const parsed = createSessionParams.safeParse(params);
  if (!parsed.success) return parsed.error.issues.map((i) => i.message).join('; ');
  try {
    freezeLaunchPolicy(parsed.data, defaults, lookups);
  } catch (error) {
    if (error instanceof LaunchPolicyError) return { field: error.field, message: error.message };
    throw error;
  }
  throw new Error('expected a rejection');
}

describe('LOC-4 sources and platforms', () => {
  it.each([
    ['cli', 'cli', false],
    ['tui', 'tui', false],
    ['gui', 'desktop', false],
    ['acp', 'acp', false],
    ['api', 'api', false],
    ['tool', 'cli', true],
    ['oneshot', 'cli', true],
  ] as const)('source %s runs as platform %s (hidden from pickers: %s)', (source, platform, hidden) => {
    const policy = freeze({ source });
    expect(policy.source).toBe(source);
    expect(policy.platform).toBe(platform);
    expect(policy.hidden).toBe(hidden);
  });

  it('defaults to cli', () => {
    expect(freeze({}).source).toBe('cli');
  });
});

describe('LOC-6 default toolsets per surface', () => {
  it('cli keeps the profile toolsets; tui adds project; gui adds project, desktop_ui, catalog', () => {
    expect(freeze({ source: 'cli' }).toolsets).toEqual(['terminal', 'clarify']);
    expect(freeze({ source: 'tui' }).toolsets).toEqual(['terminal', 'clarify', 'project']);
    expect(freeze({ source: 'gui' }).toolsets).toEqual([
      'terminal',
      'clarify',
      'project',
      'desktop_ui',
      'catalog',
    ]);
  });

  it('explicit toolsets override the surface additions, empty allowed', () => {
    expect(freeze({ source: 'gui', toolsets: ['terminal'] }).toolsets).toEqual(['terminal']);
    expect(freeze({ toolsets: [] }).toolsets).toEqual([]);
  });

  it('cli and tui may not request desktop_ui; gui may', () => {
    expect(rejection({ source: 'cli', toolsets: ['desktop_ui'] })).toMatchObject({ field: 'toolsets' });
    expect(rejection({ source: 'tui', toolsets: ['desktop_ui'] })).toMatchObject({ field: 'toolsets' });
    expect(freeze({ source: 'gui', toolsets: ['desktop_ui'] }).toolsets).toEqual(['desktop_ui']);
  });

  it('rejects unknown toolsets by name instead of dropping them', () => {
    expect(rejection({ toolsets: ['terminal', 'web', 'mail'] })).toMatchObject({
      field: 'toolsets',
      message: expect.stringContaining('"web", "mail"') as string,
    });
  });

  it('decides the coding posture once from cwd, only without explicit toolsets and never for tool', () => {
    expect(freeze({ cwd: '/work/app' }).coding_context).toBe('focus');
    expect(freeze({ cwd: '/work/notes' }).coding_context).toBeNull();
    expect(freeze({ cwd: '/work/app', toolsets: ['terminal'] }).coding_context).toBeNull();
    expect(freeze({ cwd: '/work/app', source: 'tool' }).coding_context).toBeNull();
  });
});

describe('LOC-5 launch fields', () => {
  it('freezes every supported field', () => {
    const policy = freeze({
      cwd: '/work/app',
      model: 'm-1',
      provider: 'openrouter',
      api_key: 'sk-secret',
      reasoning: 'high',
      max_turns: 7,
      skills: ['review'],
      yolo: true,
      checkpoints: true,
      accept_hooks: true,
      pass_session_id: true,
      ignore_rules: true,
      title: 'Refactor',
      hidden: true,
    });
    expect(policy).toMatchObject({
      cwd: '/work/app',
      model: 'm-1',
      provider: 'openrouter',
      base_url: null,
      requires_api_key: true,
      reasoning: 'high',
      max_turns: 7,
      skills: ['review'],
      yolo: true,
      title: 'Refactor',
      hidden: true,
    });
    expect(policy.skills_prompt).toContain('Review carefully.');
    expect(JSON.stringify(policy)).not.toContain('sk-secret');
  });

  it('a base_url session has its own endpoint and no configured provider', () => {
    const policy = freeze({ base_url: 'https://api.example.com/v1/', model: 'm-2' });
    expect(policy).toMatchObject({ provider: null, base_url: 'https://api.example.com/v1', model: 'm-2' });
  });

  it('the provider is frozen by name, with its default model when none is asked for', () => {
    expect(freeze({})).toMatchObject({ provider: 'default', model: 'default-model' });
    expect(freeze({ provider: 'openrouter' })).toMatchObject({
      provider: 'openrouter',
      model: 'openrouter-model',
    });
    expect(freeze({ provider: 'openrouter', model: 'x-1' }).model).toBe('x-1');
  });

  it('safe_mode implies ignore_user_config', () => {
    expect(freeze({ safe_mode: true }).ignore_user_config).toBe(true);
  });

  it.each([
    [{ cwd: 'relative/dir' }, 'cwd'],
    [{ cwd: '/nope' }, 'cwd'],
    [{ cwd: '/home/me/../etc' }, 'cwd'],
    [{ base_url: 'ftp://x.example' }, 'base_url'],
    [{ base_url: 'https://user:pw@x.example/v1' }, 'base_url'],
    [{ base_url: 'https://x.example/v1?key=1' }, 'base_url'],
    [{ base_url: 'https://x.example/v1#frag' }, 'base_url'],
    [{ base_url: 'not a url' }, 'base_url'],
    [{ editor: 'vim' }, 'editor'],
    [{ skills: ['nope'] }, 'skills'],
    [{ skills: ['review'], safe_mode: true }, 'skills'],
    [{ provider: 'nope' }, 'provider'],
    [{ provider: 'openrouter', base_url: 'https://x.example/v1' }, 'provider'],
    [{ provider: 'plain', reasoning: 'low' }, 'reasoning'],
  ])('rejects %j naming %s', (params, field) => {
    expect(rejection(params)).toMatchObject({ field });
  });

  it.each([
    { worktree: true },
    { history: [{ role: 'user', content: 'x' }] },
    { profile: 'other' },
    { service_tier: 'flex' },
    { source: 'telegram' },
    { model: '' },
    { max_turns: 0 },
    { max_turns: 2.5 },
    { yolo: 'yes' },
    { toolsets: 'terminal' },
    { reasoning: 'extreme' },
  ])('rejects unsupported or malformed %j at the schema', (params) => {
    expect(createSessionParams.safeParse(params).success).toBe(false);
  });

  it('checkpoints on a host without git are refused naming why; the lookup is asked only for them', () => {
    let asked = 0;
    const noGit = emptyLookups({
      ...lookups,
      checkpointsRefusal: () => {
        asked++;
        return 'git was not found';
      },
    });
    const attempt = () =>
      freezeLaunchPolicy(createSessionParams.parse({ checkpoints: true }), defaults, noGit);
    expect(attempt).toThrow(LaunchPolicyError);
    expect(attempt).toThrow(/checkpoints cannot be honoured here: git was not found/);
    try {
      attempt();
    } catch (error) {
      expect((error as LaunchPolicyError).field).toBe('checkpoints');
    }
    expect(asked).toBe(3);
    expect(freezeLaunchPolicy(createSessionParams.parse({}), defaults, noGit).checkpoints).toBe(false);
    expect(asked).toBe(3);
  });

  it('accepts editor only with acp', () => {
    expect(freeze({ source: 'acp', editor: 'zed' }).editor).toBe('zed');
  });
});

describe('LOC-3 creation digest', () => {
  const base: CreateSessionParams = { request_id: 'r1', cwd: '/work/app', model: 'm' };
  it('is equal for the same fields whatever the request_id, api_key or key order', () => {
    expect(creationDigest(base)).toBe(
      creationDigest({ model: 'm', cwd: '/work/app', request_id: 'r2', api_key: 'k' }),
    );
    expect(creationDigest({ model: 'm' })).toBe(creationDigest({ model: 'm', source: 'cli' }));
  });
  it('differs when any field differs', () => {
    expect(creationDigest(base)).not.toBe(creationDigest({ ...base, model: 'n' }));
    expect(creationDigest(base)).not.toBe(creationDigest({ ...base, toolsets: [] }));
  });
  it('publishes the contract runtime.describe shows', () => {
    const contract = creationContract();
    expect(contract.sources).toEqual(['cli', 'tui', 'gui', 'acp', 'api', 'tool', 'oneshot']);
    expect(Object.keys(contract.parameters)).toContain('api_key');
    expect(contract.parameters['max_turns']).toMatchObject({ type: 'integer', minimum: 1 });
    expect(Object.keys(contract.parameters)).not.toContain('worktree');
  });
});
