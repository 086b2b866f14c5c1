/**
 * The real daemon (`gatehouse serve` as a child process) with its Discord adapter pointed at the
 * loopback Discord stand-in (REST and gateway) and its model at the demo model in the test
 * process. `useDiscordDaemon()` registers beforeAll/afterAll for one file: one stand-in, one demo
 * model, one temp home; the test starts (and may kill and restart) the daemon itself.
 */
import fs from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import {
  BOT_ID,
  startDiscordStandIn,
  type DiscordStandIn,
  type RestCall,
  type StandInUser,
} from '../fixtures/discord-standin.js';
import { requireBuild, tempHome } from './cli.js';
import {
  dropTestSchema,
  startDaemon,
  writeConfig,
  type Backend,
  type RunningDaemon,
} from './gateway-harness.js';

export const DISCORD_TOKEN_ENV = 'GH_E2E_DISCORD_TOKEN';
export const GUILD = '900';
export const mention = (text: string) => `<@${BOT_ID}> ${text}`;

export interface DiscordDaemon {
  readonly standIn: DiscordStandIn;
  readonly model: DemoModelServer;
  readonly home: string;
  readonly daemon: RunningDaemon | null;
  start(): Promise<RunningDaemon>;
  kill(): Promise<void>;
  stop(): Promise<number | null>;
  /** Contents the bot posted to the channel, in order. */
  posts(channelId: string): string[];
  /** Says `text` in the channel; resolves with the content of the bot's next post there. */
  ask(channelId: string, user: StandInUser, text: string): Promise<string>;
  /** Resolves with the n-th post to the channel matching `pattern`. */
  waitForPost(channelId: string, pattern: RegExp, n?: number): Promise<RestCall>;
  /** The user messages of the last model request whose newest user message carries `marker`. */
  userMessages(marker: string): string[];
}

export function useDiscordDaemon(options: { discordYaml?: string[]; store?: Backend } = {}): DiscordDaemon {
  let standIn: DiscordStandIn;
  let model: DemoModelServer;
  let home: string;
  let daemon: RunningDaemon | null = null;

  /** The home's config; on postgres the harness adds the store line when it starts the daemon. */
  const configText = (): string =>
    [
      'model:',
      `  base_url: ${model.baseUrl}`,
      '  model: gatehouse-demo',
      'platforms:',
      '  discord:',
      `    token_env: ${DISCORD_TOKEN_ENV}`,
      `    api_root: ${standIn.apiRoot}`,
      ...(options.discordYaml ?? []),
      '',
    ].join('\n');

  beforeAll(async () => {
    requireBuild();
    standIn = await startDiscordStandIn();
    model = await startDemoModel();
    home = tempHome();
    writeConfig(home, configText());
  });

  afterAll(async () => {
    model.release();
    await daemon?.stop();
    await standIn.close();
    await model.close();
    await dropTestSchema(home);
    fs.rmSync(home, { recursive: true, force: true });
  });

  const contents = (channelId: string) => standIn.posted(channelId).map((c) => String(c.body.content));
  const fixture: DiscordDaemon = {
    get standIn() {
      return standIn;
    },
    get model() {
      return model;
    },
    get home() {
      return home;
    },
    get daemon() {
      return daemon;
    },
    async start() {
      daemon = await startDaemon({
        home,
        env: { [DISCORD_TOKEN_ENV]: standIn.token },
        config: configText(),
        store: options.store ?? 'sqlite',
      });
      return daemon;
    },
    async kill() {
      await daemon?.kill();
      daemon = null;
    },
    async stop() {
      const code = (await daemon?.stop()) ?? null;
      daemon = null;
      return code;
    },
    posts: contents,
    async ask(channelId, user, text) {
      const before = standIn.posted(channelId).length;
      standIn.say(channelId, user, text);
      const call = await standIn.waitForCall(
        (c) => c.method === 'POST' && c.path === `/channels/${channelId}/messages`,
        before + 1,
      );
      return String(call.body.content);
    },
    waitForPost(channelId, pattern, n = 1) {
      return standIn.waitForCall(
        (c) =>
          c.method === 'POST' &&
          c.path === `/channels/${channelId}/messages` &&
          pattern.test(String(c.body.content)),
        n,
      );
    },
    userMessages(marker) {
      const users = (r: (typeof model.requests)[number]) =>
        (r.body?.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content));
      const request = [...model.requests].reverse().find((r) => users(r).at(-1)?.includes(marker));
      if (request === undefined) throw new Error(`no model request answered "${marker}"`);
      return users(request);
    },
  };
  return fixture;
}
