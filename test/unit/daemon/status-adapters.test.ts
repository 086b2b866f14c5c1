/** How `gatehouse status` words an adapter's state (UX-1): the line an operator reads. */
import { describe, expect, it } from 'vitest';
import { describeAdapter } from '../../../src/surfaces/cli/commands/status.js';

describe('UX-1 gatehouse status adapter lines', () => {
  it('names the mode and account when running, the reason when failed, and the bare state otherwise', () => {
    expect(
      describeAdapter({
        platform: 'telegram',
        state: 'running',
        detail: null,
        account: '@gh_bot',
        mode: 'polling',
      }),
    ).toBe('telegram: polling as @gh_bot');
    // Nothing is special about a platform's name: the line comes from the status fields alone.
    expect(describeAdapter({ platform: 'telegram', state: 'running', detail: null })).toBe(
      'telegram: running',
    );
    expect(
      describeAdapter({
        platform: 'mastodon',
        state: 'running',
        detail: null,
        mode: 'webhook',
        account: '@gh',
      }),
    ).toBe('mastodon: webhook as @gh');
    expect(describeAdapter({ platform: 'telegram', state: 'failed', detail: 'Unauthorized' })).toBe(
      'telegram: error: Unauthorized',
    );
    expect(describeAdapter({ platform: 'irc', state: 'running', detail: null })).toBe('irc: running');
    // Starting: its API has not answered yet (the daemon is ready meanwhile); the detail is why the
    // last attempt failed, and a start that failed outright is tried again at a stated time.
    expect(describeAdapter({ platform: 'telegram', state: 'starting', detail: null })).toBe(
      'telegram: connecting',
    );
    expect(describeAdapter({ platform: 'telegram', state: 'starting', detail: '502: Bad Gateway' })).toBe(
      'telegram: connecting (unreachable: 502: Bad Gateway)',
    );
    expect(
      describeAdapter({
        platform: 'telegram',
        state: 'failed',
        detail: 'ECONNREFUSED',
        retry_at: '2026-12-06T12:00:00.000Z',
      }),
    ).toBe('telegram: unreachable: ECONNREFUSED (trying again at 2026-12-06T12:00:00.000Z)');
    // In a cluster, an instance that does not hold the bot's lease says why it is stopped.
    expect(
      describeAdapter({
        platform: 'telegram',
        state: 'stopped',
        detail: 'standing by: another instance of the cluster receives for this bot',
      }),
    ).toBe('telegram: stopped (standing by: another instance of the cluster receives for this bot)');
  });
});
