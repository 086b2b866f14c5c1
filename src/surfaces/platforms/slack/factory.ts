/**
 * The Slack adapter built from its config section (`platforms.slack`), for the registry. Both tokens
 * are checked first; the adapter and the Slack SDKs are loaded only then (registry.ts).
 */
import { PlatformSetupError, type PlatformConfig } from '../registry.js';
import type { SlackAdapter } from './adapter.js';

/** The keys of `platforms.slack` this factory reads, as the config schema checked them. */
export type SlackSection = {
  bot_token_env: string;
  app_token_env: string;
  api_root: string;
  require_mention: boolean;
  answer_dms: boolean;
  allowed_user_ids?: string[] | undefined;
  allowed_channel_ids?: string[] | undefined;
};

export async function slackFromConfig(config: PlatformConfig): Promise<SlackAdapter> {
  // The config schema checked this section's keys when the file was loaded.
  const section = config.section as SlackSection;
  const secret = (key: 'bot_token_env' | 'app_token_env', what: string, prefix: string): string => {
    const value = config.env[section[key]]?.trim();
    if (value === undefined || value === '') {
      throw new PlatformSetupError(
        `slack: the environment variable ${section[key]} (platforms.slack.${key}) holding the ${what} is not set`,
      );
    }
    if (!value.startsWith(prefix)) {
      // A bot token where the app token belongs would be retried for ever by the SDK: said now.
      throw new PlatformSetupError(
        `slack: ${section[key]} (platforms.slack.${key}) must hold the ${what}, which starts with ${prefix}`,
      );
    }
    return value;
  };
  const botToken = secret('bot_token_env', 'bot token', 'xoxb-');
  const appToken = secret('app_token_env', 'app-level token (Socket Mode)', 'xapp-');
  const { SlackAdapter } = await import('./adapter.js');
  return new SlackAdapter({
    botToken,
    appToken,
    apiRoot: section.api_root,
    requireMention: section.require_mention,
    answerDms: section.answer_dms,
    ...(section.allowed_user_ids === undefined ? {} : { allowedUserIds: section.allowed_user_ids }),
    ...(section.allowed_channel_ids === undefined ? {} : { allowedChannelIds: section.allowed_channel_ids }),
  });
}
