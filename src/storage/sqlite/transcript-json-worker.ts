/**
 * The transcript JSON thread's own entry (transcript-json.ts starts it; a separate bundle entry
 * point, scripts/bundle.js): a read-only connection of its own to the daemon's database, which the
 * write-ahead log lets read beside the daemon's writer, and one request at a time: the visible
 * transcript of a session, serialized, sent back as transferred buffers (no copy).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Database } from './driver.js';
import { VISIBLE_MESSAGES_SQL } from './ops/messages.js';
import { serializeRows, type TranscriptJsonReply, type TranscriptJsonRequest } from './transcript-json.js';
import type { MessageRow } from '../rows/messages.js';

const port = parentPort!;
const { file, busyTimeoutMs } = workerData as { file: string; busyTimeoutMs: number };
const db = new Database(file, { readonly: true, fileMustExist: true });
db.pragma(`busy_timeout = ${busyTimeoutMs}`);
const visible = db.prepare(VISIBLE_MESSAGES_SQL);

port.on('message', (request: TranscriptJsonRequest) => {
  let reply: TranscriptJsonReply;
  try {
    // One statement: the rows come from one state of the transcript, whatever the writer does meanwhile.
    const { length, body } = serializeRows(
      visible.iterate(request.sessionId) as Iterable<MessageRow>,
      request.form,
    );
    reply = { id: request.id, length, body };
    port.postMessage(
      reply,
      body.map((piece) => piece.buffer as ArrayBuffer),
    );
  } catch (error) {
    reply = { id: request.id, error: error instanceof Error ? error.message : String(error) };
    port.postMessage(reply);
  }
});
