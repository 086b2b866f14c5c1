/**
 * The Slack adapter's pure parts: sources keyed by KEY-1 (DMs, channels per user, shared threads,
 * the workspace as guild_id), the bot's mention, slash commands, approval blocks bound to their
 * prompt, and the factory's refusals of missing or swapped tokens.
 */
import { describe, expect, it } from 'vitest';
import { buildSessionKey } from '../../../src/domain/session/key.js';
import {
  approvalBlocks,
  settledBlocks,
  slashCommandText,
} from '../../../src/surfaces/platforms/slack/blocks.js';
import { slackFromConfig } from '../../../src/surfaces/platforms/slack/factory.js';
import {
  conversationKind,
  sourceOf,
  textForBot,
  threadOf,
} from '../../../src/surfaces/platforms/slack/source.js';
import { parseApprovalClick } from '../../../src/surfaces/platforms/native-controls.js';

const facts = {
  teamId: 'T0TEAM',
  channelId: 'C0GEN',
  kind: 'channel' as const,
  channelName: 'general',
  channelTopic: null,
  userId: 'U0ANN',
  userName: 'Ann',
  isBot: false,
  threadTs: null,
  messageId: '1700000000.000100',
};

describe('Slack sources (KEY-1)', () => {
  it('a DM, a channel per user, a multi-person DM, a shared thread; the workspace is the guild', () => {
    const dm = sourceOf({ ...facts, channelId: 'D0KIM', kind: 'im' });
    expect(buildSessionKey(dm)).toBe('agent:main:slack:dm:D0KIM');
    expect(dm.chat_name).toBeNull();
    const channel = sourceOf(facts);
    expect(channel.guild_id).toBe('T0TEAM');
    expect(buildSessionKey(channel)).toBe('agent:main:slack:channel:C0GEN:user_U0ANN');
    expect(buildSessionKey(channel, { groupSessionsPerUser: false })).toBe('agent:main:slack:channel:C0GEN');
    expect(buildSessionKey(sourceOf({ ...facts, kind: 'mpim', channelId: 'G0MP' }))).toBe(
      'agent:main:slack:group:G0MP:user_U0ANN',
    );
    const thread = sourceOf({ ...facts, threadTs: '1700000000.000001' });
    expect(thread.parent_chat_id).toBe('C0GEN');
    expect(buildSessionKey(thread)).toBe('agent:main:slack:channel:C0GEN:thread_1700000000.000001');
    expect(buildSessionKey(thread, { threadSessionsPerUser: true })).toBe(
      'agent:main:slack:channel:C0GEN:thread_1700000000.000001:user_U0ANN',
    );
  });

  it('tells threads and kinds of conversation apart as Slack writes them', () => {
    expect(threadOf({ ts: '2.0', thread_ts: '1.0' })).toBe('1.0');
    expect(threadOf({ ts: '1.0', thread_ts: '1.0' })).toBeNull(); // a thread's parent is its channel's
    expect(threadOf({ ts: '1.0' })).toBeNull();
    expect(conversationKind(undefined, 'D0KIM')).toBe('im');
    expect(conversationKind(undefined, 'C0GEN')).toBe('channel');
    expect(conversationKind('group', 'G0PRIV')).toBe('group');
  });

  it("takes the bot's mention out wherever it stands and unescapes Slack's &amp; &lt; &gt;", () => {
    expect(textForBot('<@U0BOT> is 1 &lt; 2 &amp;&amp; 3 &gt; 2?', 'U0BOT', true)).toBe('is 1 < 2 && 3 > 2?');
    expect(textForBot('hey <@U0BOT|gatehouse>', 'U0BOT', true)).toBe('hey');
    expect(textForBot('no mention', 'U0BOT', true)).toBeNull();
    expect(textForBot('no mention', 'U0BOT', false)).toBe('no mention');
  });
});

describe('Slack slash commands and approvals', () => {
  it('a command of our own name, or the first word of any other', () => {
    expect(slashCommandText('/stop', '')).toBe('/stop');
    expect(slashCommandText('/queue', ' later on ')).toBe('/queue later on');
    expect(slashCommandText('/gatehouse', 'approve session')).toBe('/approve session');
    expect(slashCommandText('/gatehouse', '/new')).toBe('/new');
    expect(slashCommandText('/gatehouse', 'dance')).toBeNull();
    expect(slashCommandText('/gatehouse', '')).toBeNull();
  });

  it('buttons carry their prompt and generation; the settled message has none', () => {
    const prompt = { prompt_id: 'p_42', execution_generation: 3, text: 'Approval needed: rm -rf x' };
    const [section, actions] = approvalBlocks(prompt) as [unknown, { elements: { action_id: string }[] }];
    expect(section).toEqual({ type: 'section', text: { type: 'mrkdwn', text: prompt.text } });
    expect(actions.elements.map((b) => parseApprovalClick(b.action_id))).toEqual([
      { text: '/approve once', prompt: { prompt_id: 'p_42', execution_generation: 3 } },
      { text: '/approve session', prompt: { prompt_id: 'p_42', execution_generation: 3 } },
      { text: '/approve always', prompt: { prompt_id: 'p_42', execution_generation: 3 } },
      { text: '/deny', prompt: { prompt_id: 'p_42', execution_generation: 3 } },
    ]);
    expect(settledBlocks(prompt, 'denied').map((b) => b.type)).toEqual(['section', 'context']);
  });
});

describe('slackFromConfig', () => {
  const section = {
    enabled: true,
    bot_token_env: 'BOT',
    app_token_env: 'APP',
    api_root: 'https://slack.com/api',
    require_mention: true,
    answer_dms: true,
    redact_pii: false,
  };
  const build = (env: NodeJS.ProcessEnv) =>
    slackFromConfig({ name: 'slack', section, env, attachmentsDir: '/nowhere' });

  it('refuses a missing token, or one where the other belongs, naming the variable', async () => {
    await expect(build({ APP: 'xapp-1' })).rejects.toThrow(
      'slack: the environment variable BOT (platforms.slack.bot_token_env) holding the bot token is not set',
    );
    await expect(build({ BOT: 'xoxb-1', APP: 'xoxb-1' })).rejects.toThrow(
      'slack: APP (platforms.slack.app_token_env) must hold the app-level token (Socket Mode), which starts with xapp-',
    );
    expect((await build({ BOT: 'xoxb-1', APP: 'xapp-1' })).status()).toMatchObject({
      platform: 'slack',
      state: 'stopped',
    });
  });
});
