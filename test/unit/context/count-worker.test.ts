/**
 * Token counts made on the worker thread (issue 32 aim 3) are the counts the event loop would make,
 * and a compression of a long transcript counts everything there: the tokenizer is never loaded on
 * the main thread.
 */
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { stopCountWorker } from '../../../src/runtime/context/count-worker.js';
import { tokensOf } from '../../../src/runtime/context/compress.js';
import { countTextTokens, keepPrimedCounts, primeTextCounts } from '../../../src/runtime/context/tokens.js';

afterAll(() => stopCountWorker());

const awkward = [
  'hello world',
  'ünïcödé ✓ 日本語テキスト 👩‍👩‍👧 emoji and \u0000 control \u2028',
  'lone surrogate \ud800 here',
  '<|endoftext without its bar, <|im_start|system',
  'line one\r\nline two\n\n\tindented',
  // Longer than a piece (2,048): cut at a space, and with no space at all.
  'word '.repeat(3_000),
  'x'.repeat(9_000),
  '😀'.repeat(2_500),
  `${'a'.repeat(2_047)} ${'b'.repeat(5_000)}`,
  '{"command":"make","args":["-j",4]}',
];

describe('counting on the worker thread', () => {
  it('gives the counts the event loop gives, for awkward and long texts', async () => {
    const release = keepPrimedCounts();
    let primed: number[];
    try {
      await primeTextCounts([...awkward, ...awkward]);
      primed = awkward.map((text) => countTextTokens(text));
    } finally {
      release();
    }
    // Released: nothing primed is left, so these are counted here, by the tokenizer on this thread.
    const here = awkward.map((text) => countTextTokens(text));
    expect(primed).toEqual(here);
    expect(here.every((n) => n > 0)).toBe(true);
  });

  it('refuses what the tokenizer refuses, as the event loop would', async () => {
    const special = 'a special token <|endoftext|> in the text';
    expect(() => countTextTokens(special)).toThrow(/special token/);
    const release = keepPrimedCounts();
    try {
      await expect(primeTextCounts([special])).rejects.toThrow(/special token/);
      // The worker is still there for the next count.
      await primeTextCounts(['after the refusal']);
      expect(countTextTokens('after the refusal')).toBe(3);
    } finally {
      release();
    }
  });

  it('gives the event loop turns on a pass whose texts were all counted before', async () => {
    // Each text takes 2 ms to produce (a walk over a long transcript), and none needs counting.
    function* slowTexts(count: number): Generator<string> {
      for (let i = 0; i < count; i++) {
        const until = performance.now() + 2;
        while (performance.now() < until);
        yield '';
      }
    }
    let turns = 0;
    let done = false;
    const tick = () => {
      turns += 1;
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    const release = keepPrimedCounts();
    try {
      await primeTextCounts(slowTexts(40));
    } finally {
      done = true;
      release();
    }
    // 80 ms of walking in slices of SLICE_MS (10): a turn of the loop after each, not one at the end.
    expect(turns).toBeGreaterThanOrEqual(5);
  });

  it('keeps nothing outside a scope', async () => {
    await expect(primeTextCounts(['hello'])).rejects.toThrow(/outside keepPrimedCounts/);
  });

  it('compresses a long transcript without loading the tokenizer on the main thread', async () => {
    const script = path.join(import.meta.dirname, 'count-worker-child.ts');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], {
      cwd: path.join(import.meta.dirname, '../../..'),
      maxBuffer: 64 * 1024 * 1024,
    });
    const child = JSON.parse(stdout) as {
      loaded: boolean;
      kind: string;
      before: { messages: number; tokens: number };
      after: { messages: number; tokens: number };
      child: Parameters<typeof tokensOf>[0][];
    };
    expect(child.kind).toBe('ready');
    expect(child.loaded).toBe(false);
    // The same numbers the event loop's own count gives (this process counts with its tokenizer).
    const { longTranscript } = await import('./count-worker-child.js');
    const messages = longTranscript();
    expect(child.before).toEqual({
      messages: messages.length,
      tokens: messages.reduce((n, m) => n + tokensOf(m), 0),
    });
    expect(child.after).toEqual({
      messages: child.child.length,
      tokens: child.child.reduce((n, m) => n + tokensOf(m), 0),
    });
  });
});
