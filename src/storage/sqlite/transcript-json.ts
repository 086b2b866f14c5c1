/**
 * Whole transcripts read and serialized on a thread of their own (issue 32 aim 3). A client that
 * resumes or reads the history of a 100,000-message session asks for 55 MB of JSON: reading its
 * rows, decoding them and serializing them took seconds of the event loop's CPU (in slices, but
 * every other session's turn waited that much longer), and its garbage collection after. Here a
 * worker thread with a read-only connection of its own (transcript-json-worker.ts; the write-ahead
 * log lets it read beside the writer) reads the transcript in one statement, so from one state of
 * it, and sends back the JSON as buffers, transferred, not copied: the event loop only writes them.
 *
 * The thread is started on the first request and stopped after IDLE_MS without one (a worker is a
 * V8 isolate of its own, about 12 MiB: an idle daemon holds none, issue 32 aim 1). It is unref'd:
 * it never keeps the daemon alive. Requests run one at a time, in order. A thread that fails or
 * exits fails the requests it held; the next request starts a new one.
 */
import { Worker } from 'node:worker_threads';
import { JsonText } from '../../domain/json-text.js';
import { publicMessage, type TranscriptJsonForm } from '../../domain/ports/session-store.js';
import { messageFromRow, type MessageRow } from '../rows/messages.js';

/** Characters of JSON gathered into one piece (the RPC surface writes a piece as one fragment). */
export const PIECE_CHARS = 256 * 1024;
/** How long the thread is kept without a request before it is stopped. */
const IDLE_MS = 60_000;

export interface TranscriptJsonRequest {
  id: number;
  sessionId: string;
  form: TranscriptJsonForm;
}

export type TranscriptJsonReply =
  { id: number; length: number; body: Uint8Array[] } | { id: number; error: string };

/**
 * Pure: the JSON of the messages these rows hold, as loadTranscript would return them (`stored`) or
 * as a client is shown them (`public`), entries comma-separated in pieces of about PIECE_CHARS cut
 * between entries. Each piece is a buffer of its own, so it can be transferred.
 */
export function serializeRows(
  rows: Iterable<MessageRow>,
  form: TranscriptJsonForm,
): { length: number; body: Uint8Array[] } {
  const encoder = new TextEncoder();
  const body: Uint8Array[] = [];
  let parts: string[] = [];
  let chars = 0;
  let length = 0;
  for (const row of rows) {
    const message = messageFromRow(row);
    const text = JSON.stringify(form === 'public' ? publicMessage(message) : message);
    parts.push(length === 0 ? text : `,${text}`);
    chars += text.length + 1;
    length++;
    if (chars >= PIECE_CHARS) {
      body.push(encoder.encode(parts.join('')));
      parts = [];
      chars = 0;
    }
  }
  if (parts.length > 0) body.push(encoder.encode(parts.join('')));
  return { length, body };
}

interface Pending {
  resolve(text: JsonText): void;
  reject(error: Error): void;
}

/** The thread of one database file; `read` is SessionStore.loadWholeTranscript. */
export class TranscriptJsonReader {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private idle: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly file: string,
    /** The worker's entry: dist/storage/sqlite/transcript-json-worker.js, found by the daemon. */
    private readonly entry: string,
    private readonly busyTimeoutMs = 5_000,
  ) {}

  /** Whether the thread is running now. */
  get running(): boolean {
    return this.worker !== null;
  }

  read(sessionId: string, form: TranscriptJsonForm): Promise<JsonText> {
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    return new Promise<JsonText>((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      clearTimeout(this.idle);
      const request: TranscriptJsonRequest = { id, sessionId, form };
      this.started().postMessage(request);
    });
  }

  /** Stops the thread; requests still waiting fail. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idle);
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
    this.failAll(new Error('the store is closed'));
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(this.entry, {
      workerData: { file: this.file, busyTimeoutMs: this.busyTimeoutMs },
    });
    worker.unref();
    worker.on('message', (reply: TranscriptJsonReply) => this.answer(reply));
    const fail = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.failAll(error);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the transcript reading thread stopped (exit code ${code})`)));
    this.worker = worker;
    return worker;
  }

  private answer(reply: TranscriptJsonReply): void {
    const waiting = this.pending.get(reply.id);
    this.pending.delete(reply.id);
    if ('error' in reply) waiting?.reject(new Error(reply.error));
    else waiting?.resolve(new JsonText(reply.length, reply.body));
    if (this.pending.size === 0) this.stopWhenIdle();
  }

  private stopWhenIdle(): void {
    clearTimeout(this.idle);
    this.idle = setTimeout(() => {
      if (this.pending.size > 0 || !this.worker) return;
      const worker = this.worker;
      this.worker = null;
      void worker.terminate();
    }, IDLE_MS);
    this.idle.unref();
  }

  private failAll(error: Error): void {
    for (const waiting of this.pending.values()) waiting.reject(error);
    this.pending.clear();
  }
}
