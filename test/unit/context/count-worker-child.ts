/**
 * Run as a process of its own by count-worker.test.ts: compresses a long transcript and prints
 * whether the tokenizer was loaded on this (the main) thread, with the compression's counts.
 */
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';
import { stopCountWorker } from '../../../src/runtime/context/count-worker.js';
import { prepareCompression } from '../../../src/runtime/context/prepare.js';
import { tokenizerLoaded } from '../../../src/runtime/context/tokens.js';
import { inProcessDemoModel } from '../../../src/runtime/demo/model.js';

/** 1,500 exchanges with tool output, one long output without spaces, and unicode. */
export function longTranscript(): TranscriptMessage[] {
  const out: TranscriptMessage[] = [];
  for (let i = 0; i < 1_500; i++) {
    out.push(
      { role: 'user', content: `step ${i}: build module m${i} ✓ 日本` },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: `c${i}`,
            type: 'function',
            function: { name: 'terminal', arguments: `{"command":"make m${i}"}` },
          },
        ],
      },
      {
        role: 'tool',
        tool_call_id: `c${i}`,
        content: i === 7 ? 'z'.repeat(6_000) : `compiled unit ${i} without warnings 😀\n`.repeat(30),
      },
      { role: 'assistant', content: `Module m${i} built.` },
    );
  }
  return out;
}

async function main(): Promise<void> {
  const messages = longTranscript();
  // The demo model without a window estimates its prompt tokens: it never loads the tokenizer.
  const prepared = await prepareCompression({
    messages,
    model: inProcessDemoModel({}),
    settings: { window: 32_000, threshold: 0.75, tailTokens: 2_000 },
  });
  const loaded = tokenizerLoaded();
  await stopCountWorker();
  if (prepared.kind !== 'ready')
    return void process.stdout.write(JSON.stringify({ loaded, kind: prepared.kind }));
  process.stdout.write(
    JSON.stringify({
      loaded,
      kind: prepared.kind,
      before: prepared.before,
      after: prepared.after,
      child: prepared.messages,
    }),
  );
}

if (process.argv[1]?.endsWith('count-worker-child.ts')) void main();
