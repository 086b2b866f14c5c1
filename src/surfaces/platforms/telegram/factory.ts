/**
 * The Telegram adapter built from its config section (`platforms.telegram`), for the registry. The
 * section's secrets are checked first; the adapter and grammY are loaded only then (registry.ts).
 */
import { PlatformSetupError, type PlatformConfig } from '../registry.js';
import type { TelegramAdapter, TelegramWebhookOptions } from './adapter.js';

/** The keys of `platforms.telegram` this factory reads, as the config schema checked them. */
export type TelegramSection = {
  token_env: string;
  api_root: string;
  allowed_user_ids?: string[] | undefined;
  mode: 'polling' | 'webhook';
  webhook?: { url: string; secret_token_env: string; host: string; port: number } | undefined;
  max_attachment_mb: number;
};

export async function telegramFromConfig(config: PlatformConfig): Promise<TelegramAdapter> {
  // The config schema checked this section's keys when the file was loaded.
  const section = config.section as TelegramSection;
  const token = config.env[section.token_env];
  if (token === undefined || token.trim() === '') {
    throw new PlatformSetupError(
      `telegram: the environment variable ${section.token_env} (platforms.telegram.token_env) holding the bot token is not set`,
    );
  }
  const webhook = section.mode === 'webhook' ? webhookOf(section, config.env) : undefined;
  const { TelegramAdapter } = await import('./adapter.js');
  return new TelegramAdapter({
    token,
    apiRoot: section.api_root,
    ...(section.allowed_user_ids === undefined ? {} : { allowedUserIds: section.allowed_user_ids }),
    ...(webhook === undefined ? {} : { webhook }),
    attachmentsDir: config.attachmentsDir,
    maxAttachmentBytes: Math.floor(section.max_attachment_mb * 1024 * 1024),
  });
}

/** Telegram's rule for secret_token: 1-256 characters of A-Z, a-z, 0-9, _ and -. */
const SECRET_TOKEN = /^[A-Za-z0-9_-]{1,256}$/;

function webhookOf(section: TelegramSection, env: NodeJS.ProcessEnv): TelegramWebhookOptions {
  const webhook = section.webhook!;
  const secret = env[webhook.secret_token_env];
  if (secret === undefined || secret === '') {
    throw new PlatformSetupError(
      `telegram: the environment variable ${webhook.secret_token_env} (platforms.telegram.webhook.secret_token_env) holding the webhook secret is not set`,
    );
  }
  if (!SECRET_TOKEN.test(secret)) {
    throw new PlatformSetupError(
      `telegram: the webhook secret in ${webhook.secret_token_env} must be 1 to 256 characters of A-Z, a-z, 0-9, _ and - (Telegram's rule); generate one with: openssl rand -hex 32`,
    );
  }
  return { url: webhook.url, secretToken: secret, host: webhook.host, port: webhook.port };
}
