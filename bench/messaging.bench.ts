/**
 * Messaging throughput: N Telegram chats (1,000; quick: 50) each send one message at once through
 * the Bot API stand-in; messages per second end to end (inject → getUpdates → gateway → turn →
 * ledger → sendMessage) with the zero-latency demo model over loopback HTTP, as a ratio to the
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
import { SqliteSessionStore } from '../src/storage/sqlite/session-store.js';
import { MessagingGateway } from '../src/surfaces/platforms/gateway.js';
import { TelegramAdapter } from '../src/surfaces/platforms/telegram/adapter.js';
import { localSessionsOn } from '../test/fixtures/local-harness.js';
import { startTelegramStandIn } from '../test/fixtures/telegram-standin.js';
import { figure, percentile, type Bench } from './lib.js';

const bench: Bench = {
  name: 'messaging',
  async run({ quick }) {
    const n = Number(process.env.MSG_BENCH_N ?? (quick ? 50 : 1000));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-msg-'));
    const demo = await startDemoModel({ latencyMs: 0 });
    const standIn = await startTelegramStandIn();
    const store = SqliteSessionStore.open(path.join(dir, 'state.db'));
    const model = new ModelClient({ baseUrl: demo.baseUrl, model: 'gatehouse-demo' });
    const prompts = new PromptBroker();
    try {
      const localRate = await localTurnRate(n, store, model, prompts, dir);

      const gateway = new MessagingGateway({
        store,
        ledger: new SqliteDeliveryLedger(store.db),
        model,
        tools: [],
        prompts,
        cwd: dir,
      });
      gateway.addAdapter(new TelegramAdapter({ token: standIn.token, apiRoot: standIn.apiRoot }));
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
      const injectedAt = new Map<number, number>();
      const start = performance.now();
      for (let i = 0; i < n; i++) {
        const id = 10_000 + i;
        injectedAt.set(id, performance.now());
        standIn.inject({
          chat: { id, type: 'private' },
          from: { id, first_name: `u${i}` },
          text: `hello ${i}`,
        });
      }
      await allDelivered;
      const elapsed = (performance.now() - start) / 1000;
      const messagingRate = n / elapsed;
      const latencies = standIn
        .sent()
        .map((call) => call.at - injectedAt.get(call.payload.chat_id as number)!)
        .sort((a, b) => a - b);
      await gateway.stop({ timeoutMs: 5000 });

      return [
        figure({
          bench: 'messaging',
          name: `${n} Telegram chats at once, end to end`,
          value: messagingRate,
          unit: 'msg/s',
          baseline: { name: 'local-session turns (LocalSessions), same store and model', value: localRate },
          aim: { op: '>=', ratio: 0.7 },
        }),
        figure({
          bench: 'messaging',
          name: 'inbound-to-reply latency p99',
          value: percentile(latencies, 99),
          unit: 'ms',
          higherIsBetter: false,
          extra: { p50_ms: percentile(latencies, 50), chats: n },
        }),
      ];
    } finally {
      await store.close();
      await standIn.close();
      await demo.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
};

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
  const sessions = localSessionsOn({
    store,
    dir,
    model,
    prompts,
    maxConcurrentTurns: n,
    onError: (error) => process.stderr.write(`local session error: ${String(error)}\n`),
  });
  const ids: string[] = [];
  sessions.events.on('session:created', (e) => ids.push(e.logical_id));
  for (let i = 0; i < n; i++) sessions.create(owner, { request_id: `bench-${i}`, toolsets: [] });
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
