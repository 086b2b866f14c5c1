/**
 * A Discord bot in a cluster (SCL-1, issue 14): two real daemons on one PostgreSQL schema with
 * cluster.enabled, both configured with the same bot, against the loopback Discord stand-in (REST
 * and gateway). Only the instance holding the bot's lease identifies on the gateway; after a
 * SIGKILL of it, the other takes the bot over, reads back what was said meanwhile from the catch-up
 * cursor the first one advanced (a fenced write), and answers it once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { botIdOf } from '../../src/domain/cluster/bots.js';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { startDiscordStandIn, type DiscordStandIn } from '../fixtures/discord-standin.js';
import { requireBuild } from './cli.js';
import { startCluster, type TestCluster } from './cluster-harness.js';

const TOKEN_ENV = 'GH_E2E_DISCORD_TOKEN';
const KIM = { id: '401', username: 'kim' };
const said = (text: string) => `${DEMO_LABEL}: you said: ${text}`;

let standIn: DiscordStandIn;
let model: DemoModelServer;
let cluster: TestCluster | null = null;

beforeAll(async () => {
  requireBuild();
  standIn = await startDiscordStandIn();
  model = await startDemoModel();
});

afterAll(async () => {
  model.release();
  await cluster?.cleanup();
  await standIn.close();
  await model.close();
});

const posts = (channel: string) => standIn.posted(channel).map((c) => String(c.body.content));
const isPost = (channel: string) => (c: { method: string; path: string }) =>
  c.method === 'POST' && c.path === `/channels/${channel}/messages`;
const identifies = () => standIn.received.filter((r) => r.op === 2).length;

describe('a Discord bot in a cluster', { timeout: 180_000 }, () => {
  it('only the holder identifies; after a SIGKILL the other reads back what was said and answers it once', async () => {
    standIn.channel({ id: '600', type: 1 });
    cluster = await startCluster({
      size: 2,
      leaseS: 3,
      env: { [TOKEN_ENV]: standIn.token },
      config: [
        `model: {base_url: ${JSON.stringify(model.baseUrl)}, model: gatehouse-demo}`,
        'platforms:',
        '  discord:',
        `    token_env: ${TOKEN_ENV}`,
        `    api_root: ${standIn.apiRoot}`,
      ].join('\n'),
    });
    const bot = `discord:${botIdOf('discord', standIn.token)}`;
    const c = cluster;
    const held = await c.until(
      'an instance holds the bot',
      () => c.botLease(bot),
      (l) => l?.owner_epoch != null,
    );
    const first = c.byEpoch(held!.owner_epoch!);
    standIn.say('600', KIM, 'before the kill');
    await standIn.waitForCall(isPost('600'));
    // Both instances run, and the bot identified once: the standby one never connected.
    expect(identifies()).toBe(1);
    await c.repliesSettled();

    await c.kill(first);
    standIn.say('600', KIM, 'said while nobody held the bot');
    await c.until(
      'the other instance holds the bot',
      () => c.botLease(bot),
      (l) => l?.owner_epoch === c.daemon(1 - first).epoch,
    );
    await standIn.waitForCall(
      (call) => isPost('600')(call) && call.body.content === said('said while nobody held the bot'),
    );
    expect(posts('600')).toEqual([said('before the kill'), said('said while nobody held the bot')]);
    expect(identifies()).toBe(2);
    const lastUser = (r: DemoModelServer['requests'][number]) =>
      (r.body?.messages ?? []).filter((m) => m.role === 'user').at(-1)?.content;
    expect(model.requests.filter((r) => lastUser(r) === 'before the kill')).toHaveLength(1);
  });
});
