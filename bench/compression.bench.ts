/**
 * One compression of a 100,000-token transcript (issue 11): plan, the one summary call to the
 * in-process demo model, composing the child, and publishing it in one SQLite transaction. The
 * baseline, measured alternately in the same run, is loading that transcript from the store —
 * what every turn did before compression existed. Tokens before and after are reported too.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { SessionSourceFields, TranscriptMessage } from '../src/domain/vocabulary.js';
import { SessionSource } from '../src/domain/session/source.js';
import { prepareCompression } from '../src/runtime/context/prepare.js';
import { countTextTokens } from '../src/runtime/context/tokens.js';
import { inProcessDemoModel } from '../src/runtime/demo/model.js';
import { SqliteSessionStore } from '../src/storage/sqlite/session-store.js';
import { figure, type Bench } from './lib.js';

const SOURCE: SessionSourceFields = new SessionSource({ platform: 'local', chat_id: 'bench' }).toJSON();

/** About 100,000 tokens of exchanges: user text, a tool call with a long output, an answer. */
function transcript(): TranscriptMessage[] {
  const out: TranscriptMessage[] = [];
  for (let n = 0; ; n++) {
    out.push({ role: 'user', content: `step ${n}: please look at src/module${n}.ts and fix what fails` });
    out.push({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: `call_${n}`,
          type: 'function',
          function: { name: 'terminal', arguments: `{"command":"cat src/module${n}.ts"}` },
        },
      ],
    });
    out.push({
      role: 'tool',
      tool_call_id: `call_${n}`,
      name: 'terminal',
      content: `export const value${n} = ${n};\n`.repeat(40),
    });
    out.push({ role: 'assistant', content: `Module ${n} is fixed: value${n} is exported once now.` });
    if (n % 20 === 19 && out.reduce((s, m) => s + countTextTokens(m.content ?? ''), 0) >= 100_000) return out;
  }
}

const bench: Bench = {
  name: 'compression',
  async run({ quick }) {
    const dir = mkdtempSync(path.join(tmpdir(), 'gh-bench-compress-'));
    const store = SqliteSessionStore.open(path.join(dir, 'state.db'));
    const messages = transcript();
    const runs = quick ? 3 : 5;
    const model = inProcessDemoModel();
    const settings = { window: 200_000, threshold: 0.75, tailTokens: 2000 };
    const loads: number[] = [];
    const compressions: number[] = [];
    let tokens = { before: 0, after: 0, messagesBefore: 0, messagesAfter: 0 };
    try {
      for (let run = 0; run < runs + 1; run++) {
        const key = `bench:${run}`;
        const { entry } = await store.getOrCreateSession(key, SOURCE);
        await store.appendToTranscript(entry.session_id, messages);
        let t = performance.now();
        const loaded = await store.loadTranscript(entry.session_id);
        const load = performance.now() - t;
        t = performance.now();
        const prepared = await prepareCompression({ messages: loaded, model, settings });
        if (prepared.kind !== 'ready') throw new Error(`compression did not run: ${prepared.kind}`);
        const published = await store.publishCompression({
          sessionKey: key,
          parentSessionId: entry.session_id,
          childSessionId: `${entry.session_id}-child`,
          messages: prepared.messages,
          backoffSubject: key,
        });
        const compress = performance.now() - t;
        if (!published) throw new Error('the compression was not published');
        if (run === 0) continue; // warm-up: loads the tokenizer once
        loads.push(load);
        compressions.push(compress);
        tokens = {
          before: prepared.before.tokens,
          after: prepared.after.tokens,
          messagesBefore: prepared.before.messages,
          messagesAfter: prepared.after.messages,
        };
      }
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    return [
      figure({
        bench: 'compression',
        name: 'compress a 100k-token transcript (plan + summary + publish)',
        value: median(compressions),
        unit: 'ms',
        baseline: { name: 'load the same transcript', value: median(loads) },
        higherIsBetter: false,
        extra: {
          runs,
          tokens_before: tokens.before,
          tokens_after: tokens.after,
          messages_before: tokens.messagesBefore,
          messages_after: tokens.messagesAfter,
        },
      }),
    ];
  },
};

export default bench;
