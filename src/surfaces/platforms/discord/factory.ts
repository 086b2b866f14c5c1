/**
 * The Discord adapter built from its config section (`platforms.discord`), for the registry. The
 * token is checked first; the adapter and @discordjs/core are loaded only then (registry.ts).
 */
import { PlatformSetupError, type PlatformConfig } from '../registry.js';
import type { DiscordAdapter } from './adapter.js';

/** The keys of `platforms.discord` this factory reads, as the config schema checked them. */
export type DiscordSection = {
  token_env: string;
  api_root: string;
  require_mention: boolean;
  answer_dms: boolean;
  register_commands: boolean;
  allowed_user_ids?: string[] | undefined;
  allowed_role_ids?: string[] | undefined;
  allowed_channel_ids?: string[] | undefined;
};

export async function discordFromConfig(config: PlatformConfig): Promise<DiscordAdapter> {
  // The config schema checked this section's keys when the file was loaded.
  const section = config.section as DiscordSection;
  const token = config.env[section.token_env];
  if (token === undefined || token.trim() === '') {
    throw new PlatformSetupError(
      `discord: the environment variable ${section.token_env} (platforms.discord.token_env) holding the bot token is not set`,
    );
  }
  const { DiscordAdapter } = await import('./adapter.js');
  return new DiscordAdapter({
    token,
    apiRoot: section.api_root,
    requireMention: section.require_mention,
    answerDms: section.answer_dms,
    registerCommands: section.register_commands,
    ...(section.allowed_user_ids === undefined ? {} : { allowedUserIds: section.allowed_user_ids }),
    ...(section.allowed_role_ids === undefined ? {} : { allowedRoleIds: section.allowed_role_ids }),
    ...(section.allowed_channel_ids === undefined ? {} : { allowedChannelIds: section.allowed_channel_ids }),
    ...(config.cursors === undefined ? {} : { cursors: config.cursors }),
  });
}
