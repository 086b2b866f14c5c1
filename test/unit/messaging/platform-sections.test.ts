/**
 * The built-in platforms' factories read their config sections through types of their own (an
 * adapter never imports the daemon); the config schema must keep producing what they read.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { parseConfig } from '../../../src/daemon/config.js';
import type {
  DiscordSection as DiscordSchemaOutput,
  SlackSection as SlackSchemaOutput,
  TelegramSection as TelegramSchemaOutput,
} from '../../../src/daemon/config-platforms.js';
import { discordFromConfig, type DiscordSection } from '../../../src/surfaces/platforms/discord/factory.js';
import { PlatformSetupError } from '../../../src/surfaces/platforms/registry.js';
import { slackFromConfig, type SlackSection } from '../../../src/surfaces/platforms/slack/factory.js';
import {
  telegramFromConfig,
  type TelegramSection,
} from '../../../src/surfaces/platforms/telegram/factory.js';

describe('built-in platform sections', () => {
  it('the schema output of each section is what its factory reads', () => {
    expectTypeOf<TelegramSchemaOutput>().toExtend<TelegramSection>();
    expectTypeOf<DiscordSchemaOutput>().toExtend<DiscordSection>();
    expectTypeOf<SlackSchemaOutput>().toExtend<SlackSection>();
  });

  it('each factory builds its adapter from a parsed section, and refuses a missing secret with PlatformSetupError', async () => {
    const { config } = parseConfig(
      [
        'platforms:',
        '  telegram:',
        '    mode: webhook',
        '    webhook: { url: "https://bot.example/hook", secret_token_env: TG_SECRET, port: 0 }',
        '  discord:',
        '    allowed_role_ids: [42]',
        '  slack:',
        '    allowed_channel_ids: [C0123ABCD]',
        '',
      ].join('\n'),
      '/nowhere/config.yaml',
    );
    const env: NodeJS.ProcessEnv = {
      TELEGRAM_BOT_TOKEN: '1:t',
      TG_SECRET: 's3cret',
      DISCORD_BOT_TOKEN: 'd',
      SLACK_BOT_TOKEN: 'xoxb-1',
      SLACK_APP_TOKEN: 'xapp-1',
    };
    const configOf = (name: 'telegram' | 'discord' | 'slack', environment = env) => ({
      name,
      section: config.platforms[name]!,
      env: environment,
      attachmentsDir: '/nowhere',
    });
    const built = await Promise.all([
      telegramFromConfig(configOf('telegram')),
      discordFromConfig(configOf('discord')),
      slackFromConfig(configOf('slack')),
    ]);
    expect(built.map((adapter) => adapter.status().platform)).toEqual(['telegram', 'discord', 'slack']);

    const withoutSecret = () => telegramFromConfig(configOf('telegram', { TELEGRAM_BOT_TOKEN: '1:t' }));
    await expect(withoutSecret()).rejects.toThrow(PlatformSetupError);
    await expect(withoutSecret()).rejects.toThrow(
      'telegram: the environment variable TG_SECRET (platforms.telegram.webhook.secret_token_env) holding the webhook secret is not set',
    );
  });
});
