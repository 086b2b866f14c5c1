/**
 * The real daemon with its Discord adapter pointed at the loopback Discord stand-in (REST and
 * gateway) and its model at the demo model in the test process (the scaffolding is
 * platform-fixture.ts). `useDiscordDaemon()` registers beforeAll/afterAll for one file.
 */
import {
  BOT_ID,
  startDiscordStandIn,
  type DiscordStandIn,
  type RestCall,
  type StandInUser,
} from '../fixtures/discord-standin.js';
import type { Backend } from './gateway-harness.js';
import { usePlatformDaemon, withDaemonLog, type PlatformDaemon } from './platform-fixture.js';

export const DISCORD_TOKEN_ENV = 'GH_E2E_DISCORD_TOKEN';
export const GUILD = '900';
export const mention = (text: string) => `<@${BOT_ID}> ${text}`;

export interface DiscordDaemon extends PlatformDaemon<DiscordStandIn> {
  /** Contents the bot posted to the channel, in order. */
  posts(channelId: string): string[];
  /** Says `text` in the channel; resolves with the content of the bot's next post there. */
  ask(channelId: string, user: StandInUser, text: string): Promise<string>;
  /** Resolves with the n-th post to the channel matching `pattern`. */
  waitForPost(channelId: string, pattern: RegExp, n?: number): Promise<RestCall>;
}

/** `discordYaml`: extra lines under `platforms.discord:` (indented by the caller); `yaml`: top-level lines. */
export function useDiscordDaemon(
  options: { discordYaml?: string[]; yaml?: string[]; store?: Backend } = {},
): DiscordDaemon {
  const base = usePlatformDaemon({
    platform: 'discord',
    store: options.store,
    startStandIn: startDiscordStandIn,
    standInYaml: (standIn) => [`    token_env: ${DISCORD_TOKEN_ENV}`, `    api_root: ${standIn.apiRoot}`],
    tokenEnv: (standIn) => ({ [DISCORD_TOKEN_ENV]: standIn.token }),
    platformYaml: options.discordYaml,
    yaml: options.yaml,
  });
  const isPost = (channelId: string) => (c: RestCall) =>
    c.method === 'POST' && c.path === `/channels/${channelId}/messages`;
  return Object.assign(base, {
    posts: (channelId: string) => base.standIn.posted(channelId).map((c) => String(c.body.content)),
    async ask(channelId: string, user: StandInUser, text: string) {
      const before = base.standIn.posted(channelId).length;
      base.standIn.say(channelId, user, text);
      const call = await withDaemonLog(
        () => base.daemon,
        base.standIn.waitForCall(isPost(channelId), before + 1),
      );
      return String(call.body.content);
    },
    waitForPost(channelId: string, pattern: RegExp, n = 1) {
      return withDaemonLog(
        () => base.daemon,
        base.standIn.waitForCall((c) => isPost(channelId)(c) && pattern.test(String(c.body.content)), n),
      );
    },
  });
}
