/**
 * Members' launch limits (issue 30): the `auth:` config section is closed and checked, and the
 * limits it yields refuse or force exactly what they say, naming the field.
 */
import { describe, expect, it } from 'vitest';
import { memberLimits } from '../../../src/daemon/config-auth.js';
import { parseConfig } from '../../../src/daemon/config.js';
import { DaemonError } from '../../../src/daemon/errors.js';
import { checkMemberModel, limitMemberLaunch } from '../../../src/domain/auth/member-limits.js';
import { levelAllows } from '../../../src/domain/auth/shares.js';
import { GatewayError } from '../../../src/domain/errors.js';

const FILE = '/home/me/.gatehouse/config.yaml';

function refused(text: string): string {
  try {
    parseConfig(text, FILE);
  } catch (error) {
    expect(error).toBeInstanceOf(DaemonError);
    return (error as DaemonError).message;
  }
  throw new Error('expected the config to be refused');
}

function field(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).reason).toBe('member_limit');
    return String((error as GatewayError).details?.['field']);
  }
  throw new Error('expected a member_limit refusal');
}

describe('auth config', () => {
  it('defaults: no yolo for members, safe mode allowed, every provider and model, no message text', () => {
    const { config } = parseConfig('', FILE);
    expect(memberLimits(config.auth)).toEqual({
      yolo: false,
      safe_mode: 'allowed',
      providers: null,
      models: null,
    });
    expect(config.auth.audit.message_text).toBe(false);
  });

  it('refuses unknown keys, bad values and providers that are not configured, naming the key', () => {
    expect(refused('auth:\n  members:\n    yolos: true\n')).toContain('auth.members');
    expect(refused('auth:\n  members:\n    safe_mode: always\n')).toContain('allowed or forced');
    expect(refused('auth:\n  members:\n    models: []\n')).toContain('auth.members.models');
    expect(
      refused(
        'model:\n  base_url: http://127.0.0.1:9/v1\n  model: m\nauth:\n  members:\n    providers: [nope]\n',
      ),
    ).toContain('"nope" is not a configured provider');
  });
});

describe('member limits', () => {
  const strict = { yolo: false, safe_mode: 'forced', providers: ['default'], models: ['m1'] } as const;

  it('refuses yolo, base_url and an explicit safe_mode: false; forces safe mode otherwise', () => {
    expect(field(() => limitMemberLaunch({ yolo: true }, strict))).toBe('yolo');
    expect(field(() => limitMemberLaunch({ base_url: 'http://x.example/v1' }, strict))).toBe('base_url');
    expect(field(() => limitMemberLaunch({ safe_mode: false }, strict))).toBe('safe_mode');
    expect(limitMemberLaunch({ cwd: '/tmp' }, strict)).toEqual({ cwd: '/tmp', safe_mode: true });
    expect(limitMemberLaunch({ yolo: true }, { ...strict, yolo: true, safe_mode: 'allowed' })).toEqual({
      yolo: true,
    });
  });

  it('allows only the listed providers and models', () => {
    expect(() => checkMemberModel(strict, 'default', 'm1')).not.toThrow();
    expect(field(() => checkMemberModel(strict, 'other', 'm1'))).toBe('provider');
    expect(field(() => checkMemberModel(strict, null, 'm1'))).toBe('provider');
    expect(field(() => checkMemberModel(strict, 'default', 'm2'))).toBe('model');
  });

  it('share levels nest: read < submit < full, and none grants operator or creation', () => {
    expect(levelAllows('read', 'session:read')).toBe(true);
    expect(levelAllows('read', 'session:submit')).toBe(false);
    expect(levelAllows('submit', 'session:submit')).toBe(true);
    expect(levelAllows('submit', 'session:approve')).toBe(false);
    expect(levelAllows('full', 'session:approve')).toBe(true);
    for (const level of ['read', 'submit', 'full'] as const) {
      expect(levelAllows(level, 'session:operator')).toBe(false);
      expect(levelAllows(level, 'session:create')).toBe(false);
    }
  });
});
