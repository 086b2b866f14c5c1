/**
 * Counting prompt tokens when the provider has not told us (SPEC LIN-1, issue 11 "Context budget").
 *
 * The provider's own count (`usage.prompt_tokens`, kept as `last_prompt_tokens`) is the truth; this
 * counter fills the gap for messages the provider has not seen yet. It uses gpt-tokenizer's
 * cl100k_base encoding (docs/dependencies.md), loaded on the first count and not before: loading it
 * costs about half a second and 40 MB, which a daemon that never needs it must not pay at start-up.
 */
import { createRequire } from 'node:module';
import type { WireMessage } from '../model/wire.js';
import { countOnWorker } from './count-worker.js';
import { LoopSlices } from './slices.js';

/** What every chat message costs besides its text (role, separators), as OpenAI documents it. */
const PER_MESSAGE_TOKENS = 4;

type CountTokens = (text: string) => number;
let counter: CountTokens | null = null;

function loadCounter(): CountTokens {
  if (counter === null) {
    const require = createRequire(import.meta.url);
    const encoding = require('gpt-tokenizer/encoding/cl100k_base') as {
      countTokens(text: string): number;
    };
    counter = (text) => encoding.countTokens(text);
  }
  return counter;
}

/** Whether the tokenizer has been loaded in this process (start-up measurements read it). */
export function tokenizerLoaded(): boolean {
  return counter !== null;
}

/**
 * Byte-pair encoding is quadratic in the length of a run it cannot split (400,000 characters with
 * no space take over a minute on one core, with the event loop stopped), so a long text is counted
 * in pieces of at most CHUNK characters, each cut just before a whitespace where one is near. A cut
 * inside a word can only add a token or so per piece: the count stays an honest budget estimate.
 */
const CHUNK = 2048;
const CUT_WINDOW = 256;

export function countTextTokens(text: string): number {
  if (text === '') return 0;
  const known = primed.get(text);
  if (known !== undefined) return known;
  const count = loadCounter();
  if (text.length <= CHUNK) return count(text);
  let tokens = 0;
  for (const piece of pieces(text)) tokens += count(piece);
  return tokens;
}

function* pieces(text: string): Generator<string> {
  let start = 0;
  while (text.length - start > CHUNK) {
    let end = start + CHUNK;
    for (let i = end; i > end - CUT_WINDOW; i -= 1) {
      // Cut before the space: the encoding joins a space to the word after it (" word").
      if (/\s/.test(text[i]!)) {
        end = i;
        break;
      }
    }
    yield text.slice(start, end);
    start = end;
  }
  yield text.slice(start);
}

/**
 * Counts made on the worker thread (count-worker.ts) for texts a long piece of work is about to
 * count here: with them at hand, a compression never loads the tokenizer on the event loop nor
 * counts there (issue 32 aim 3). Kept while at least one such piece of work runs (keepPrimedCounts).
 */
const primed = new Map<string, number>();
let keepers = 0;

/** Keeps primed counts until the returned function is called (the last call forgets them all). */
export function keepPrimedCounts(): () => void {
  keepers += 1;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    keepers -= 1;
    if (keepers === 0) primed.clear();
  };
}

/** Characters of text sent to the worker in one message (its copy is made on the event loop). */
const BATCH_CHARS = 1024 * 1024;
/**
 * Batches on their way to the worker at once: each answer needs a turn of the event loop, which
 * on a busy daemon can take a while, so the worker is never left waiting for the next batch.
 */
const IN_FLIGHT = 4;

/**
 * Counts `texts` on the worker, cut into the very pieces countTextTokens cuts, and keeps each
 * text's count for countTextTokens while a keepPrimedCounts scope is open. The texts are read and
 * sent a slice at a time, so even a transcript of 50 MB never holds the loop.
 */
export async function primeTextCounts(texts: Iterable<string>): Promise<void> {
  if (keepers === 0) throw new Error('primeTextCounts outside keepPrimedCounts: its counts would be lost');
  const slices = new LoopSlices();
  let batch: { texts: string[]; pieces: string[]; owners: number[]; chars: number } = fresh();
  const seen = new Set<string>();
  const flying = new Set<Promise<void>>();
  const send = async (full: typeof batch) => {
    const counted = countBatch(full).finally(() => flying.delete(counted));
    // Awaited by the race below or the last Promise.all; this keeps a second failure from going unhandled.
    counted.catch(() => undefined);
    flying.add(counted);
    if (flying.size >= IN_FLIGHT) await Promise.race(flying);
  };
  for (const text of texts) {
    // Checked for every text, counted or not: a second pass over a transcript whose texts are all
    // primed already skips every one, and held the loop 50-70 ms for 100,000 messages when only
    // the texts it counted could end a slice.
    if (slices.due()) await slices.pause();
    if (text === '' || primed.has(text) || seen.has(text)) continue;
    seen.add(text);
    const index = batch.texts.push(text) - 1;
    for (const piece of text.length <= CHUNK ? [text] : pieces(text)) {
      batch.pieces.push(piece);
      batch.owners.push(index);
      batch.chars += piece.length;
    }
    if (batch.chars >= BATCH_CHARS) {
      await send(batch);
      batch = fresh();
    }
  }
  await send(batch);
  await Promise.all(flying);
}

function fresh() {
  return { texts: [] as string[], pieces: [] as string[], owners: [] as number[], chars: 0 };
}

async function countBatch(batch: { texts: string[]; pieces: string[]; owners: number[] }): Promise<void> {
  if (batch.pieces.length === 0) return;
  const counts = await countOnWorker(batch.pieces);
  const sums = new Array<number>(batch.texts.length).fill(0);
  for (let i = 0; i < counts.length; i++) sums[batch.owners[i]!]! += counts[i]!;
  // A scope may have closed while the worker counted: then nothing is kept.
  if (keepers === 0) return;
  for (let i = 0; i < batch.texts.length; i++) primed.set(batch.texts[i]!, sums[i]!);
}

/** The texts countMessageTokens counts of a message (what to prime for it). */
export function* messageTexts(message: WireMessage): Generator<string, void, undefined> {
  if (typeof message.content === 'string') yield message.content;
  for (const call of message.tool_calls ?? []) {
    yield call.function.name;
    yield call.function.arguments;
  }
}

/** The tokens one message adds to a request: its text, its tool calls, and the per-message frame. */
export function countMessageTokens(message: WireMessage): number {
  let tokens = PER_MESSAGE_TOKENS;
  if (typeof message.content === 'string') tokens += countTextTokens(message.content);
  for (const call of message.tool_calls ?? []) {
    tokens += countTextTokens(call.function.name) + countTextTokens(call.function.arguments) + 3;
  }
  return tokens;
}

export function countPromptTokens(messages: readonly WireMessage[]): number {
  let tokens = 3; // every reply is primed with the assistant header
  for (const message of messages) tokens += countMessageTokens(message);
  return tokens;
}

/** A whole request: its messages and the tool schemas the model is shown with them. */
export function countRequestTokens(messages: readonly WireMessage[], tools: readonly unknown[] = []): number {
  return countPromptTokens(messages) + (tools.length === 0 ? 0 : countTextTokens(JSON.stringify(tools)));
}
