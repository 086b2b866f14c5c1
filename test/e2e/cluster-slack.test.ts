/**
 * A Slack app in a cluster (SCL-1, issue 14): two real daemons on one PostgreSQL schema with
 * cluster.enabled, both configured with the same app, against the loopback Slack stand-in (Web API
 * and Socket Mode). Only the instance holding the app's lease opens a Socket Mode connection; a
 * SIGKILL of it mid-turn hands the app to the other, which finishes the turn once.
 */
import { describe, expect, it } from 'vitest';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import { botIdOf } from '../../src/domain/cluster/bots.js';
import { RESUME_NOTE, resumedNotice } from '../../src/domain/messaging/turn.js';
import { startSlackStandIn } from '../fixtures/slack-standin.js';
import { lastUserText, useBotCluster } from './cluster-harness.js';

const BOT_TOKEN_ENV = 'GH_E2E_SLACK_BOT_TOKEN';
const APP_TOKEN_ENV = 'GH_E2E_SLACK_APP_TOKEN';
const KIM = { id: 'U0KIM', name: 'kim' };
const said = (text: string) => `${DEMO_LABEL}: you said: ${text}`;

const slack = useBotCluster(startSlackStandIn);

const posts = (channel: string) => slack.standIn.posted(channel).map((c) => String(c.body.text));

async function ask(channel: string, text: string): Promise<string> {
  const before = slack.standIn.posted(channel).length;
  slack.standIn.say(channel, KIM, text);
  const call = await slack.standIn.waitForCall(
    (c) => c.method === 'chat.postMessage' && c.body.channel === channel,
    before + 1,
  );
  return String(call.body.text);
}

describe('a Slack app in a cluster', { timeout: 180_000 }, () => {
  it('only the holder connects; a SIGKILL mid-turn hands the app over and the chat gets one answer', async () => {
    slack.standIn.user(KIM);
    slack.standIn.conversation({ id: 'D0KIM', kind: 'im' });
    const c = await slack.start({
      size: 2,
      // Renewals may stall for up to half of it before the instance stops itself: two gate runs side by
      // side (load 20-27) stalled one for more than 3 s as it started.
      leaseS: 10,
      env: { [BOT_TOKEN_ENV]: slack.standIn.botToken, [APP_TOKEN_ENV]: slack.standIn.appToken },
      platform: () => [
        'slack:',
        `  bot_token_env: ${BOT_TOKEN_ENV}`,
        `  app_token_env: ${APP_TOKEN_ENV}`,
        `  api_root: ${slack.standIn.apiRoot}`,
      ],
    });
    const app = `slack:${botIdOf('slack', slack.standIn.appToken)}`;
    const held = await c.until(
      'an instance holds the app',
      () => c.botLease(app),
      (l) => l?.owner_epoch != null,
    );
    const first = c.byEpoch(held!.owner_epoch!);
    expect(await ask('D0KIM', 'before the kill')).toBe(said('before the kill'));
    // Both instances run, and the app was connected once: the standby one opened nothing.
    expect(slack.standIn.connectionsOpened()).toBe(1);

    await c.repliesSettled();
    const seen = slack.model.requests.length;
    slack.model.hold();
    slack.standIn.say('D0KIM', KIM, 'mid-turn');
    await slack.model.waitForRequests(seen + 1);
    await c.kill(first);
    slack.model.release();
    await c.until(
      'the other instance holds the app',
      () => c.botLease(app),
      (l) => l?.owner_epoch === c.daemon(1 - first).epoch,
    );
    await slack.standIn.waitForCall(
      (call) => call.method === 'chat.postMessage' && call.body.text === said('mid-turn'),
    );
    expect(await ask('D0KIM', 'after the kill')).toBe(said('after the kill'));
    expect(posts('D0KIM')).toEqual([
      said('before the kill'),
      resumedNotice('model', false),
      said('mid-turn'),
      said('after the kill'),
    ]);
    expect(slack.standIn.connectionsOpened()).toBe(2);
    expect(slack.model.requests.filter((r) => lastUserText(r) === 'mid-turn')).toHaveLength(2);
    expect(slack.model.requests.filter((r) => lastUserText(r) === RESUME_NOTE)).toHaveLength(0);
  });
});
