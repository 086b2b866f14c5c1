/**
 * Token counting on a worker thread (issue 32 aim 3): loading the tokenizer compiles 1.1 MB of
 * rank tables and builds its maps, about 0.6 s of CPU in one piece, and counting a long transcript
 * takes seconds more. On the event loop either stops every other session. The worker is started on
 * the first request and not before (an idle daemon never loads the tokenizer, issue 32 aim 1),
 * loads the very module tokens.ts would, and counts the pieces tokens.ts cuts, so its counts are
 * the same numbers. It is unref'd: it never keeps the daemon alive, and is stopped after IDLE_MS
 * without work so its memory is given back.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * The worker's code: counts each text of a request with the module it is told to load. What the
 * tokenizer throws (it refuses text holding a special token such as `<|endoftext|>`) is sent back
 * and thrown to the caller, as the same count on the event loop would throw it.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { countTokens } = require(workerData.tokenizer);
parentPort.on('message', ({ id, texts }) => {
  try {
    parentPort.postMessage({ id, counts: texts.map((text) => countTokens(text)) });
  } catch (error) {
    parentPort.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
`;

/** How long the worker is kept without work before it is stopped. */
const IDLE_MS = 60_000;

interface Pending {
  resolve(counts: number[]): void;
  reject(error: Error): void;
}

let worker: Worker | null = null;
let nextId = 1;
const pending = new Map<number, Pending>();
let idleTimer: NodeJS.Timeout | undefined;

function tokenizerPath(): string {
  return createRequire(import.meta.url).resolve('gpt-tokenizer/encoding/cl100k_base');
}

function started(): Worker {
  if (worker) return worker;
  const created = new Worker(WORKER_SOURCE, { eval: true, workerData: { tokenizer: tokenizerPath() } });
  created.unref();
  created.on('message', ({ id, counts, error }: { id: number; counts?: number[]; error?: string }) => {
    const request = pending.get(id);
    pending.delete(id);
    if (error !== undefined) request?.reject(new Error(error));
    else request?.resolve(counts ?? []);
    if (pending.size === 0) scheduleStop();
  });
  const fail = (error: Error) => {
    if (worker === created) worker = null;
    for (const request of pending.values()) request.reject(error);
    pending.clear();
  };
  created.on('error', fail);
  created.on('exit', (code) => fail(new Error(`the token counting worker stopped (exit code ${code})`)));
  worker = created;
  return created;
}

function scheduleStop(): void {
  clearTimeout(idleTimer);
  idleTimer = setTimeout(() => {
    if (pending.size > 0 || !worker) return;
    const stopping = worker;
    worker = null;
    void stopping.terminate();
  }, IDLE_MS);
  idleTimer.unref();
}

/** The tokens of each text, each counted whole by the worker (callers cut long texts first). */
export function countOnWorker(texts: readonly string[]): Promise<number[]> {
  if (texts.length === 0) return Promise.resolve([]);
  clearTimeout(idleTimer);
  const id = nextId++;
  return new Promise<number[]>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    started().postMessage({ id, texts });
  });
}

/** Stops the worker now (tests; a daemon leaves it to its idle timer). */
export async function stopCountWorker(): Promise<void> {
  const stopping = worker;
  worker = null;
  clearTimeout(idleTimer);
  if (stopping) await stopping.terminate();
}
