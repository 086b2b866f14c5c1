/**
 * The real daemon (`gatehouse serve` as a child process) with its Slack adapter pointed at the
 * loopback Slack stand-in (Web API and Socket Mode) and its model at the demo model in the test
 * process. `useSlackDaemon()` registers beforeAll/afterAll for one file: one stand-in, one demo
 * model, one temp home; the test starts (and may kill and restart) the daemon itself.
 */
import fs from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import {
  BOT_USER_ID,
  startSlackStandIn,
  type ApiCall,
  type SlackStandIn,
  type StandInUser,
} from '../fixtures/slack-standin.js';
import { requireBuild, tempHome } from './cli.js';
import {
  dropTestSchema,
  startDaemon,
  writeConfig,
  type Backend,
  type RunningDaemon,
} from './gateway-harness.js';

export const BOT_TOKEN_ENV = 'GH_E2E_SLACK_BOT_TOKEN';
export const APP_TOKEN_ENV = 'GH_E2E_SLACK_APP_TOKEN';
export const mention = (text: string) => `<@${BOT_USER_ID}> ${text}`;
export const said = (text: string) => `${DEMO_LABEL}: you said: ${text}`;

export interface SlackDaemon {
  readonly standIn: SlackStandIn;
  readonly model: DemoModelServer;
  readonly home: string;
  start(): Promise<RunningDaemon>;
  kill(): Promise<void>;
  /** Texts the bot posted to the channel (chat.postMessage), in order. */
  posts(channelId: string): string[];
  /** Says `text`; resolves with the text of the bot's next post to the channel. */
  ask(channelId: string, user: StandInUser, text: string, threadTs?: string): Promise<string>;
  /** Resolves with the n-th post to the channel whose text matches `pattern`. */
  waitForPost(channelId: string, pattern: RegExp, n?: number): Promise<ApiCall>;
  /** The user messages of the last model request whose newest user message carries `marker`. */
  userMessages(marker: string): string[];
  /** How many model requests had `text` as their newest user message. */
  asked(text: string): number;
}

export function useSlackDaemon(options: { slackYaml?: string[]; store?: Backend } = {}): SlackDaemon {
  let standIn: SlackStandIn;
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
      '  slack:',
      `    bot_token_env: ${BOT_TOKEN_ENV}`,
      `    app_token_env: ${APP_TOKEN_ENV}`,
      `    api_root: ${standIn.apiRoot}`,
      ...(options.slackYaml ?? []),
      '',
    ].join('\n');

  beforeAll(async () => {
    requireBuild();
    standIn = await startSlackStandIn();
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

  const lastUsers = (r: DemoModelServer['requests'][number]) =>
    (r.body?.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content));
  const fixture: SlackDaemon = {
    get standIn() {
      return standIn;
    },
    get model() {
      return model;
    },
    get home() {
      return home;
    },
    async start() {
      daemon = await startDaemon({
        home,
        env: { [BOT_TOKEN_ENV]: standIn.botToken, [APP_TOKEN_ENV]: standIn.appToken },
        config: configText(),
        store: options.store ?? 'sqlite',
      });
      return daemon;
    },
    async kill() {
      await daemon?.kill();
      daemon = null;
    },
    posts: (channelId) => standIn.posted(channelId).map((c) => String(c.body.text)),
    async ask(channelId, user, text, threadTs) {
      const before = standIn.posted(channelId).length;
      standIn.say(channelId, user, text, threadTs === undefined ? {} : { threadTs });
      const call = await standIn.waitForCall(
        (c) => c.method === 'chat.postMessage' && c.body.channel === channelId,
        before + 1,
      );
      return String(call.body.text);
    },
    waitForPost(channelId, pattern, n = 1) {
      return standIn.waitForCall(
        (c) =>
          c.method === 'chat.postMessage' &&
          c.body.channel === channelId &&
          pattern.test(String(c.body.text)),
        n,
      );
    },
    userMessages(marker) {
      const request = [...model.requests].reverse().find((r) => lastUsers(r).at(-1)?.includes(marker));
      if (request === undefined) throw new Error(`no model request answered "${marker}"`);
      return lastUsers(request);
    },
    asked(text) {
      return model.requests.filter((r) => lastUsers(r).at(-1) === text).length;
    },
  };
  return fixture;
}
