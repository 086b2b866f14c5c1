/** The Telegram adapter built from its config section (`platforms.telegram`), for the registry. */
import type { TelegramSection } from '../../../daemon/config.js';
import { DaemonError } from '../../../daemon/errors.js';
import type { PlatformConfig } from '../registry.js';
import { TelegramAdapter } from './adapter.js';

export function telegramFromConfig(config: PlatformConfig): TelegramAdapter {
  // The config schema checked this section's keys when the file was loaded.
  const section = config.section as TelegramSection;
  const token = config.env[section.token_env];
  if (token === undefined || token.trim() === '') {
    throw new DaemonError(
      'service_failed',
      `telegram: the environment variable ${section.token_env} (platforms.telegram.token_env) holding the bot token is not set`,
    );
  }
  return new TelegramAdapter({
    token,
    apiRoot: section.api_root,
    ...(section.allowed_user_ids === undefined ? {} : { allowedUserIds: section.allowed_user_ids }),
  });
}
