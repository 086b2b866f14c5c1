/**
 * The real daemon with its Slack adapter pointed at the loopback Slack stand-in (Web API and Socket
 * Mode) and its model at the demo model in the test process (the scaffolding is
 * platform-fixture.ts). `useSlackDaemon()` registers beforeAll/afterAll for one file.
 */
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import {
  BOT_USER_ID,
  startSlackStandIn,
  type ApiCall,
  type SlackStandIn,
  type StandInUser,
} from '../fixtures/slack-standin.js';
import type { Backend } from './gateway-harness.js';
import { usePlatformDaemon, type PlatformDaemon } from './platform-fixture.js';

export const BOT_TOKEN_ENV = 'GH_E2E_SLACK_BOT_TOKEN';
export const APP_TOKEN_ENV = 'GH_E2E_SLACK_APP_TOKEN';
export const mention = (text: string) => `<@${BOT_USER_ID}> ${text}`;
export const said = (text: string) => `${DEMO_LABEL}: you said: ${text}`;

export interface SlackDaemon extends PlatformDaemon<SlackStandIn> {
  /** Texts the bot posted to the channel (chat.postMessage), in order. */
  posts(channelId: string): string[];
  /** Says `text`; resolves with the text of the bot's next post to the channel. */
  ask(channelId: string, user: StandInUser, text: string, threadTs?: string): Promise<string>;
  /** Resolves with the n-th post to the channel whose text matches `pattern`. */
  waitForPost(channelId: string, pattern: RegExp, n?: number): Promise<ApiCall>;
}

/** `slackYaml`: extra lines under `platforms.slack:` (indented by the caller); `yaml`: top-level lines. */
export function useSlackDaemon(
  options: { slackYaml?: string[]; yaml?: string[]; store?: Backend } = {},
): SlackDaemon {
  const base = usePlatformDaemon({
    platform: 'slack',
    store: options.store,
    startStandIn: startSlackStandIn,
    standInYaml: (standIn) => [
      `    bot_token_env: ${BOT_TOKEN_ENV}`,
      `    app_token_env: ${APP_TOKEN_ENV}`,
      `    api_root: ${standIn.apiRoot}`,
    ],
    tokenEnv: (standIn) => ({ [BOT_TOKEN_ENV]: standIn.botToken, [APP_TOKEN_ENV]: standIn.appToken }),
    platformYaml: options.slackYaml,
    yaml: options.yaml,
  });
  const isPost = (channelId: string) => (c: ApiCall) =>
    c.method === 'chat.postMessage' && c.body.channel === channelId;
  return Object.assign(base, {
    posts: (channelId: string) => base.standIn.posted(channelId).map((c) => String(c.body.text)),
    async ask(channelId: string, user: StandInUser, text: string, threadTs?: string) {
      const before = base.standIn.posted(channelId).length;
      base.standIn.say(channelId, user, text, threadTs === undefined ? {} : { threadTs });
      const call = await base.standIn.waitForCall(isPost(channelId), before + 1);
      return String(call.body.text);
    },
    waitForPost(channelId: string, pattern: RegExp, n = 1) {
      return base.standIn.waitForCall((c) => isPost(channelId)(c) && pattern.test(String(c.body.text)), n);
    },
  });
}
