/**
 * A Slack app in a cluster (SCL-1, issue 14): two real daemons on one PostgreSQL schema with
 * cluster.enabled, both configured with the same app, against the loopback Slack stand-in (Web API
 * and Socket Mode). Only the instance holding the app's lease opens a Socket Mode connection; a
 * SIGKILL of it mid-turn hands the app to the other, which finishes the turn once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { botIdOf } from '../../src/domain/cluster/bots.js';
import { RESUME_NOTE, resumedNotice } from '../../src/surfaces/platforms/turn.js';
import { startSlackStandIn, type SlackStandIn } from '../fixtures/slack-standin.js';
import { requireBuild } from './cli.js';
import { startCluster, type TestCluster } from './cluster-harness.js';

const BOT_TOKEN_ENV = 'GH_E2E_SLACK_BOT_TOKEN';
const APP_TOKEN_ENV = 'GH_E2E_SLACK_APP_TOKEN';
const KIM = { id: 'U0KIM', name: 'kim' };
const said = (text: string) => `${DEMO_LABEL}: you said: ${text}`;

let standIn: SlackStandIn;
let model: DemoModelServer;
let cluster: TestCluster | null = null;

beforeAll(async () => {
  requireBuild();
  standIn = await startSlackStandIn();
  model = await startDemoModel();
});

afterAll(async () => {
  model.release();
  await cluster?.cleanup();
  await standIn.close();
  await model.close();
});

const posts = (channel: string) => standIn.posted(channel).map((c) => String(c.body.text));

async function ask(channel: string, text: string): Promise<string> {
  const before = standIn.posted(channel).length;
  standIn.say(channel, KIM, text);
  const call = await standIn.waitForCall(
    (c) => c.method === 'chat.postMessage' && c.body.channel === channel,
    before + 1,
  );
  return String(call.body.text);
}

describe('a Slack app in a cluster', { timeout: 180_000 }, () => {
  it('only the holder connects; a SIGKILL mid-turn hands the app over and the chat gets one answer', async () => {
    standIn.user(KIM);
    standIn.conversation({ id: 'D0KIM', kind: 'im' });
    cluster = await startCluster({
      size: 2,
      leaseS: 3,
      env: { [BOT_TOKEN_ENV]: standIn.botToken, [APP_TOKEN_ENV]: standIn.appToken },
      config: [
        `model: {base_url: ${JSON.stringify(model.baseUrl)}, model: gatehouse-demo}`,
        'platforms:',
        '  slack:',
        `    bot_token_env: ${BOT_TOKEN_ENV}`,
        `    app_token_env: ${APP_TOKEN_ENV}`,
        `    api_root: ${standIn.apiRoot}`,
      ].join('\n'),
    });
    const bot = `slack:${botIdOf('slack', standIn.appToken)}`;
    const c = cluster;
    const held = await c.until(
      'an instance holds the app',
      () => c.botLease(bot),
      (l) => l?.owner_epoch != null,
    );
    const first = c.byEpoch(held!.owner_epoch!);
    expect(await ask('D0KIM', 'before the kill')).toBe(said('before the kill'));
    // Both instances run, and the app was connected once: the standby one opened nothing.
    expect(standIn.connectionsOpened()).toBe(1);

    await c.repliesSettled();
    const seen = model.requests.length;
    model.hold();
    standIn.say('D0KIM', KIM, 'mid-turn');
    await model.waitForRequests(seen + 1);
    await c.kill(first);
    model.release();
    await c.until(
      'the other instance holds the app',
      () => c.botLease(bot),
      (l) => l?.owner_epoch === c.daemon(1 - first).epoch,
    );
    await standIn.waitForCall(
      (call) => call.method === 'chat.postMessage' && call.body.text === said('mid-turn'),
    );
    expect(await ask('D0KIM', 'after the kill')).toBe(said('after the kill'));
    expect(posts('D0KIM')).toEqual([
      said('before the kill'),
      resumedNotice('model', false),
      said('mid-turn'),
      said('after the kill'),
    ]);
    expect(standIn.connectionsOpened()).toBe(2);
    const lastUser = (r: DemoModelServer['requests'][number]) =>
      (r.body?.messages ?? []).filter((m) => m.role === 'user').at(-1)?.content;
    expect(model.requests.filter((r) => lastUser(r) === 'mid-turn')).toHaveLength(2);
    expect(model.requests.filter((r) => lastUser(r) === RESUME_NOTE)).toHaveLength(0);
  });
});
