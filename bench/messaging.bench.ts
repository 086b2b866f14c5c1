/**
 * Messaging throughput, per platform: N Telegram chats (1,000; quick: 50) each send one message at
 * once through the Bot API stand-in (inject → getUpdates → gateway → turn → ledger → sendMessage),
 * then N Discord DMs through the Discord stand-in (MESSAGE_CREATE on the gateway WebSocket →
 * gateway → turn → ledger → POST /channels/{id}/messages), then N Slack DMs through the Slack
 * stand-in (an events_api envelope on the Socket Mode WebSocket, acknowledged once taken →
 * gateway → turn → ledger → chat.postMessage); messages per second end to end with the
 * zero-latency demo model over loopback HTTP, as a ratio to the
 * local-session turn rate measured in the same run through the product's own path: the LocalSessions
 * service with SqliteLocalStore, its scheduler and turn job (admission, claim with the input,
 * settlement with the answer and usage), on the same store file and the same demo model, N sessions
 * each submitting one prompt at once. Also the p99 of inbound-to-reply latency (injection to the
 * reply's sendMessage). MSG_BENCH_N overrides the number of chats.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { makePrincipal, OPERATOR_CAPABILITIES } from '../src/domain/auth/principal.js';
import { PromptBroker } from '../src/runtime/approvals/broker.js';
import { startDemoModel } from '../src/runtime/demo/server.js';
import { ModelClient } from '../src/runtime/model/client.js';
import { SqliteDeliveryLedger } from '../src/storage/sqlite/delivery-ledger.js';
import { SqlitePlatformCursors } from '../src/storage/sqlite/platform-cursors.js';
import { SqliteSessionStore } from '../src/storage/sqlite/session-store.js';
import { MessagingGateway } from '../src/domain/messaging/gateway.js';
import { DiscordAdapter } from '../src/surfaces/platforms/discord/adapter.js';
import { SlackAdapter } from '../src/surfaces/platforms/slack/adapter.js';
import { TelegramAdapter } from '../src/surfaces/platforms/telegram/adapter.js';
import { localSessionsOn } from '../test/fixtures/local-harness.js';
import { startDiscordStandIn } from '../test/fixtures/discord-standin.js';
import { startSlackStandIn } from '../test/fixtures/slack-standin.js';
import { startTelegramStandIn } from '../test/fixtures/telegram-standin.js';
import { figure, percentile, type Bench } from './lib.js';

const bench: Bench = {
  name: 'messaging',
  async run({ quick }) {
    const n = Number(process.env.MSG_BENCH_N ?? (quick ? 50 : 1000));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-msg-'));
    const demo = await startDemoModel({ latencyMs: 0 });
    const store = SqliteSessionStore.open(path.join(dir, 'state.db'));
    const model = new ModelClient({ baseUrl: demo.baseUrl, model: 'gatehouse-demo' });
    const prompts = new PromptBroker();
    try {
      const localRate = await localTurnRate(n, store, model, prompts, dir);

      const telegram = await platformRun(store, model, prompts, dir, n, 'telegram');
      const discord = await platformRun(store, model, prompts, dir, n, 'discord');
      const slack = await platformRun(store, model, prompts, dir, n, 'slack');
      const figures = (run: PlatformRun, label: string) => [
        figure({
          bench: 'messaging',
          name: `${n} ${label} chats at once, end to end`,
          value: run.rate,
          unit: 'msg/s',
          baseline: { name: 'local-session turns (LocalSessions), same store and model', value: localRate },
          aim: { op: '>=', ratio: 0.7 },
        }),
        figure({
          bench: 'messaging',
          name: `${label === 'Telegram' ? '' : `${label} `}inbound-to-reply latency p99`,
          value: percentile(run.latencies, 99),
          unit: 'ms',
          higherIsBetter: false,
          extra: { p50_ms: percentile(run.latencies, 50), chats: n },
        }),
      ];
      return [...figures(telegram, 'Telegram'), ...figures(discord, 'Discord'), ...figures(slack, 'Slack')];
    } finally {
      await store.close();
      await demo.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
};

interface PlatformRun {
  rate: number;
  latencies: number[];
}

/**
 * N chats of one platform, each saying one message at the same moment through the platform's
 * stand-in (Telegram: getUpdates; Discord: a gateway MESSAGE_CREATE each; Slack: an envelope
 * each on the socket); messages per second
 * from the first message to the last reply's delivery, and each reply's latency.
 */
async function platformRun(
  store: SqliteSessionStore,
  model: ModelClient,
  prompts: PromptBroker,
  dir: string,
  n: number,
  platform: 'telegram' | 'discord' | 'slack',
): Promise<PlatformRun> {
  const gateway = new MessagingGateway({
    store,
    ledger: new SqliteDeliveryLedger(store.db),
    model,
    tools: [],
    prompts,
    cwd: dir,
  });
  const telegram = platform === 'telegram' ? await startTelegramStandIn() : null;
  const discord = platform === 'discord' ? await startDiscordStandIn() : null;
  const slack = platform === 'slack' ? await startSlackStandIn() : null;
  try {
    if (slack !== null) {
      gateway.addAdapter(
        new SlackAdapter({ botToken: slack.botToken, appToken: slack.appToken, apiRoot: slack.apiRoot }),
      );
      for (let i = 0; i < n; i++) {
        slack.conversation({ id: `D${40_000 + i}`, kind: 'im' });
        slack.user({ id: `U${50_000 + i}`, name: `u${i}` });
      }
    } else if (telegram !== null) {
      gateway.addAdapter(new TelegramAdapter({ token: telegram.token, apiRoot: telegram.apiRoot }));
    } else {
      gateway.addAdapter(
        new DiscordAdapter({
          token: discord!.token,
          apiRoot: discord!.apiRoot,
          registerCommands: false,
          cursors: new SqlitePlatformCursors(store.db),
        }),
      );
      for (let i = 0; i < n; i++) discord!.channel({ id: String(20_000 + i), type: 1 });
    }
    await gateway.start();
    let delivered = 0;
    const allDelivered = new Promise<void>((resolve) =>
      gateway.events.on('delivery:sent', () => {
        if (++delivered === n) resolve();
      }),
    );
    gateway.events.on('delivery:failed', (e) => process.stderr.write(`delivery failed: ${e.message}\n`));
    gateway.events.on('turn:complete', (e) => {
      if (e.outcome !== 'completed') process.stderr.write(`turn ${e.outcome}: ${e.final_text}\n`);
    });
    const injectedAt = new Map<string, number>();
    const start = performance.now();
    for (let i = 0; i < n; i++) {
      const id = (platform === 'telegram' ? 10_000 : platform === 'discord' ? 20_000 : 40_000) + i;
      injectedAt.set(slack !== null ? `D${id}` : String(id), performance.now());
      if (slack !== null) {
        slack.say(`D${id}`, { id: `U${50_000 + i}`, name: `u${i}` }, `hello ${i}`);
      } else if (telegram !== null) {
        telegram.inject({
          chat: { id, type: 'private' },
          from: { id, first_name: `u${i}` },
          text: `hello ${i}`,
        });
      } else {
        discord!.say(String(id), { id: String(30_000 + i), username: `u${i}` }, `hello ${i}`);
      }
    }
    await allDelivered;
    const rate = n / ((performance.now() - start) / 1000);
    const replies =
      slack !== null
        ? slack.calls
            .filter((c) => c.method === 'chat.postMessage')
            .map((c) => ({ chat: String(c.body.channel), at: c.at }))
        : telegram !== null
          ? telegram.sent().map((call) => ({ chat: String(call.payload.chat_id), at: call.at }))
          : discord!.calls
              .filter((c) => c.method === 'POST' && c.path.endsWith('/messages'))
              .map((c) => ({ chat: c.path.split('/')[2]!, at: c.at }));
    const latencies = replies.map((r) => r.at - injectedAt.get(r.chat)!).sort((a, b) => a - b);
    await gateway.stop({ timeoutMs: 5000 });
    return { rate, latencies };
  } finally {
    await telegram?.close();
    await discord?.close();
    await slack?.close();
  }
}

/**
 * Local-session turns through the product's path, in process: N sessions are created first (a
 * chat's session is made by its first message, a local one by session.create beforehand), then each
 * submits one prompt at the same moment; turns per second from the first submit to the last settlement.
 */
async function localTurnRate(
  n: number,
  store: SqliteSessionStore,
  model: ModelClient,
  prompts: PromptBroker,
  dir: string,
): Promise<number> {
  const owner = makePrincipal('native:owner', 'native', 'default', OPERATOR_CAPABILITIES);
  const sessions = await localSessionsOn({
    store,
    dir,
    model,
    prompts,
    maxConcurrentTurns: n,
    onError: (error) => process.stderr.write(`local session error: ${String(error)}\n`),
  });
  const ids: string[] = [];
  sessions.events.on('session:created', (e) => ids.push(e.logical_id));
  for (let i = 0; i < n; i++) await sessions.create(owner, { request_id: `bench-${i}`, toolsets: [] });
  let settled = 0;
  const allSettled = new Promise<void>((resolve) =>
    sessions.events.on('turn:settled', (e) => {
      if (e.outcome !== 'completed') process.stderr.write(`local turn ${e.outcome}: ${e.detail}\n`);
      if (++settled === n) resolve();
    }),
  );
  const start = performance.now();
  await Promise.all(
    ids.map((id, i) =>
      sessions.inputs.submit(owner, { session_id: id, submission_id: `s-${i}`, text: `hello ${i}` }),
    ),
  );
  await allSettled;
  return n / ((performance.now() - start) / 1000);
}

export default bench;
