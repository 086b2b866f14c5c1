/**
 * Issue 28, SPEC CTX-1: `home_channels:`, per platform the chat where scheduled output goes. A chat
 * id or `{chat_id, name}`; a platform that is not enabled, an empty id or an unknown key is refused
 * with a message naming it, never accepted and ignored.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/daemon/config.js';
import { homeChannelsOf } from '../../../src/daemon/config-platforms.js';

const FILE = '/home/me/.gatehouse/config.yaml';
const TELEGRAM = 'platforms:\n  telegram: {token_env: TG}\n';

function refusal(yaml: string): string {
  try {
    parseConfig(yaml, FILE);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('home_channels', () => {
  it('is empty when absent', () => {
    expect(homeChannelsOf(parseConfig('', FILE).config)).toEqual([]);
  });

  it('reads a chat id, or a chat id with a name, per enabled platform', () => {
    const { config } = parseConfig(`${TELEGRAM}home_channels:\n  telegram: -100123\n`, FILE);
    expect(homeChannelsOf(config)).toEqual([{ platform: 'telegram', chat_id: '-100123', chat_name: null }]);
    const named = parseConfig(`${TELEGRAM}home_channels:\n  telegram: {chat_id: "42", name: Ops}\n`, FILE);
    expect(homeChannelsOf(named.config)).toEqual([{ platform: 'telegram', chat_id: '42', chat_name: 'Ops' }]);
  });

  it('refuses a platform that is not enabled, naming the enabled ones', () => {
    expect(refusal('home_channels:\n  telegram: 42\n')).toMatch(/home_channels\.telegram.*no platform is/s);
    expect(refusal(`${TELEGRAM}home_channels:\n  slack: C0123\n`)).toMatch(
      /home_channels\.slack.*enabled: telegram/s,
    );
  });

  it('refuses an empty chat id and unknown keys', () => {
    expect(refusal(`${TELEGRAM}home_channels:\n  telegram: ""\n`)).toContain('home_channels.telegram');
    expect(refusal(`${TELEGRAM}home_channels:\n  telegram: {chat_id: 1, topic: 2}\n`)).toContain(
      'home_channels.telegram',
    );
  });
});
