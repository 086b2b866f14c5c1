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
 *
 * The bytes handed out are bounded across all callers: a reply holds its JSON until its writer
 * releases it (JsonText.release, once written or dropped), and while the replies not yet released
 * hold MAX_HELD_BYTES or more, the next request waits its turn here instead of being read. So many
 * clients resuming one 100,000-message session at once hold at most that much plus the one reply
 * being read, not 55 MB each. A reply dropped without a release is counted back when it is
 * garbage-collected, so a forgotten release can slow reads down but never stop them.
 */
import { Worker } from 'node:worker_threads';
import { JsonText } from '../../domain/json-text.js';
import { publicMessage, type TranscriptJsonForm } from '../../domain/ports/session-store.js';
import { messageFromRow, type MessageRow } from '../rows/messages.js';

/** Characters of JSON gathered into one piece (the RPC surface writes a piece as one fragment). */
export const PIECE_CHARS = 256 * 1024;
/** How long the thread is kept without a request before it is stopped. */
const IDLE_MS = 60_000;
/** Bytes of replies handed out and not yet released before the next request waits. */
export const MAX_HELD_BYTES = 256 * 1024 * 1024;

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
  request: TranscriptJsonRequest;
  resolve(text: JsonText): void;
  reject(error: Error): void;
}

/** One reply's bytes, counted until it is released or collected. */
interface Held {
  bytes: number;
  released: boolean;
}

export interface TranscriptJsonReaderOptions {
  busyTimeoutMs?: number;
  /** MAX_HELD_BYTES unless given (tests). */
  maxHeldBytes?: number;
}

/** The thread of one database file; `read` is SessionStore.loadWholeTranscript. */
export class TranscriptJsonReader {
  private worker: Worker | null = null;
  private nextId = 1;
  /** Requests not yet sent to the thread, in order. */
  private readonly queued: Pending[] = [];
  /** The request the thread is reading, if any. */
  private reading: Pending | null = null;
  private idle: NodeJS.Timeout | undefined;
  private closed = false;
  private heldBytes = 0;
  private readonly busyTimeoutMs: number;
  private readonly maxHeldBytes: number;
  /** Counts back a reply that was collected without being released. */
  private readonly collected = new FinalizationRegistry<Held>((held) => this.giveBack(held));

  constructor(
    private readonly file: string,
    /** The worker's entry: dist/storage/sqlite/transcript-json-worker.js, found by the daemon. */
    private readonly entry: string,
    options: TranscriptJsonReaderOptions = {},
  ) {
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5_000;
    this.maxHeldBytes = options.maxHeldBytes ?? MAX_HELD_BYTES;
  }

  /** Whether the thread is running now. */
  get running(): boolean {
    return this.worker !== null;
  }

  /** Bytes of replies handed out and not yet released, and requests waiting for room. */
  get load(): { heldBytes: number; waiting: number } {
    return { heldBytes: this.heldBytes, waiting: this.queued.length };
  }

  read(sessionId: string, form: TranscriptJsonForm): Promise<JsonText> {
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    return new Promise<JsonText>((resolve, reject) => {
      clearTimeout(this.idle);
      this.queued.push({ request: { id: this.nextId++, sessionId, form }, resolve, reject });
      this.next();
    });
  }

  /** Sends the next request to the thread when none is being read and the held bytes leave room. */
  private next(): void {
    if (this.closed || this.reading || this.queued.length === 0) return;
    if (this.heldBytes >= this.maxHeldBytes) return;
    this.reading = this.queued.shift()!;
    this.started().postMessage(this.reading.request);
  }

  private giveBack(held: Held): void {
    if (held.released) return;
    held.released = true;
    this.heldBytes -= held.bytes;
    this.next();
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
    const waiting = this.reading;
    if (waiting?.request.id !== reply.id) return;
    this.reading = null;
    if ('error' in reply) waiting.reject(new Error(reply.error));
    else waiting.resolve(this.handOut(reply.length, reply.body));
    if (this.queued.length === 0) this.stopWhenIdle();
    this.next();
  }

  /** A reply's JsonText, its bytes counted as held until it is released (or collected). */
  private handOut(length: number, body: Uint8Array[]): JsonText {
    const held: Held = { bytes: body.reduce((sum, piece) => sum + piece.byteLength, 0), released: false };
    this.heldBytes += held.bytes;
    const text = new JsonText(length, body, () => this.giveBack(held));
    this.collected.register(text, held);
    return text;
  }

  private stopWhenIdle(): void {
    clearTimeout(this.idle);
    this.idle = setTimeout(() => {
      if (this.reading || this.queued.length > 0 || !this.worker) return;
      const worker = this.worker;
      this.worker = null;
      void worker.terminate();
    }, IDLE_MS);
    this.idle.unref();
  }

  private failAll(error: Error): void {
    const failed = [...(this.reading ? [this.reading] : []), ...this.queued];
    this.reading = null;
    this.queued.length = 0;
    for (const waiting of failed) waiting.reject(error);
  }
}
