/**
 * Messaging throughput: N Telegram chats (1,000; quick: 50) each send one message at once through
 * the Bot API stand-in; messages per second end to end (inject → getUpdates → gateway → turn →
 * ledger → sendMessage) with the zero-latency demo model over loopback HTTP, as a ratio to a local
 * turn rate measured in the same run: runTurn directly on the same demo model and the same store,
 * with the same crash-safety bookkeeping (session, in-flight marker, transcript, usage) and the
 * same concurrency. Also the p99 of inbound-to-reply latency (injection to the reply's sendMessage).
 * MSG_BENCH_N overrides the number of chats.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { SessionSource } from '../src/domain/session/source.js';
import { PromptBroker } from '../src/runtime/approvals/broker.js';
import { startDemoModel } from '../src/runtime/demo/server.js';
import { ModelClient } from '../src/runtime/model/client.js';
import { runTurn } from '../src/runtime/runner.js';
import { SqliteDeliveryLedger } from '../src/storage/sqlite/delivery-ledger.js';
import { SqliteSessionStore } from '../src/storage/sqlite/session-store.js';
import { MessagingGateway } from '../src/surfaces/platforms/gateway.js';
import { TelegramAdapter } from '../src/surfaces/platforms/telegram/adapter.js';
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
      // Local baseline: the same work a turn needs, without a platform in between.
      const local = async (i: number) => {
        const key = `agent:main:local:dm:bench${i}`;
        const source = new SessionSource({ platform: 'local', chat_id: `bench${i}`, chat_type: 'dm' });
        const { entry } = await store.getOrCreateSession(key, source.toJSON());
        await store.markTurnStarted(key);
        const result = await runTurn({
          sessionId: entry.session_id,
          admissionId: `local${i}`,
          executionGeneration: 1,
          model,
          systemPrompt: 'bench',
          tools: [],
          cwd: dir,
          yolo: false,
          maxTurns: 4,
          history: await store.loadTranscript(entry.session_id),
          input: { role: 'user', content: `hello ${i}` },
          transcript: {
            append: (id, messages) => store.appendToTranscript(id, messages).then(() => undefined),
          },
          prompts,
          signal: new AbortController().signal,
          emit: () => undefined,
        });
        await store.clearTurnMarker(key);
        await store.addUsage(key, result.usage);
      };
      const localStart = performance.now();
      await Promise.all(Array.from({ length: n }, (_, i) => local(i)));
      const localRate = n / ((performance.now() - localStart) / 1000);

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
          baseline: { name: 'local turns, same store and model', value: localRate },
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

export default bench;
