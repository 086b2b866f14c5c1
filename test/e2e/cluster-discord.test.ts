/**
 * A Discord bot in a cluster (SCL-1, issue 14): two real daemons on one PostgreSQL schema with
 * cluster.enabled, both configured with the same bot, against the loopback Discord stand-in (REST
 * and gateway). Only the instance holding the bot's lease identifies on the gateway; after a
 * SIGKILL of it, the other takes the bot over, reads back what was said meanwhile from the catch-up
 * cursor the first one advanced (a fenced write), and answers it once.
 */
import { describe, expect, it } from 'vitest';
import { botIdOf } from '../../src/domain/cluster/bots.js';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import { startDiscordStandIn } from '../fixtures/discord-standin.js';
import { lastUserText, useBotCluster } from './cluster-harness.js';

const TOKEN_ENV = 'GH_E2E_DISCORD_TOKEN';
const KIM = { id: '401', username: 'kim' };
const said = (text: string) => `${DEMO_LABEL}: you said: ${text}`;

const discord = useBotCluster(startDiscordStandIn);

const posts = (channel: string) => discord.standIn.posted(channel).map((c) => String(c.body.content));
const isPost = (channel: string) => (c: { method: string; path: string }) =>
  c.method === 'POST' && c.path === `/channels/${channel}/messages`;
const identifies = () => discord.standIn.received.filter((r) => r.op === 2).length;

describe('a Discord bot in a cluster', { timeout: 180_000 }, () => {
  it('only the holder identifies; after a SIGKILL the other reads back what was said and answers it once', async () => {
    discord.standIn.channel({ id: '600', type: 1 });
    const c = await discord.start({
      size: 2,
      // Renewals may stall for up to half of it before the instance stops itself: two gate runs side by
      // side (load 20-27) stalled renewals for more than 3 s.
      leaseS: 10,
      env: { [TOKEN_ENV]: discord.standIn.token },
      platform: () => ['discord:', `  token_env: ${TOKEN_ENV}`, `  api_root: ${discord.standIn.apiRoot}`],
    });
    const bot = `discord:${botIdOf('discord', discord.standIn.token)}`;
    const held = await c.until(
      'an instance holds the bot',
      () => c.botLease(bot),
      (l) => l?.owner_epoch != null,
    );
    const first = c.byEpoch(held!.owner_epoch!);
    discord.standIn.say('600', KIM, 'before the kill');
    await discord.standIn.waitForCall(isPost('600'));
    // Both instances run, and the bot identified once: the standby one never connected.
    expect(identifies()).toBe(1);
    await c.repliesSettled();

    await c.kill(first);
    discord.standIn.say('600', KIM, 'said while nobody held the bot');
    await c.until(
      'the other instance holds the bot',
      () => c.botLease(bot),
      (l) => l?.owner_epoch === c.daemon(1 - first).epoch,
    );
    await discord.standIn.waitForCall(
      (call) => isPost('600')(call) && call.body.content === said('said while nobody held the bot'),
    );
    expect(posts('600')).toEqual([said('before the kill'), said('said while nobody held the bot')]);
    expect(identifies()).toBe(2);
    expect(discord.model.requests.filter((r) => lastUserText(r) === 'before the kill')).toHaveLength(1);
  });
});
