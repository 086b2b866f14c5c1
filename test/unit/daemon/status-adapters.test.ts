/** How `gatehouse status` words an adapter's state (UX-1): the line an operator reads. */
import { describe, expect, it } from 'vitest';
import { describeAdapter } from '../../../src/surfaces/cli/commands/status.js';

describe('UX-1 gatehouse status adapter lines', () => {
  it('names the bot when polling, the reason when failed, and the bare state otherwise', () => {
    expect(
      describeAdapter({ platform: 'telegram', state: 'running', detail: null, account: '@gh_bot' }),
    ).toBe('telegram: polling as @gh_bot');
    expect(describeAdapter({ platform: 'telegram', state: 'failed', detail: 'Unauthorized' })).toBe(
      'telegram: error: Unauthorized',
    );
    expect(describeAdapter({ platform: 'irc', state: 'running', detail: null })).toBe('irc: running');
    expect(describeAdapter({ platform: 'telegram', state: 'starting', detail: null })).toBe(
      'telegram: starting',
    );
  });
});
