/**
 * A long reply written as it is serialized (issue 32 aim 3): the JSON of the whole history of a
 * 100,000-message session is 55 MB, and `JSON.stringify` of it plus one write held the event loop
 * for a third of a second, every other session waiting. Here its pieces (json-slices.ts) are
 * gathered into fragments of about FRAGMENT_CHARS, each written as a WebSocket fragment of one
 * message (text-frame.ts), with the loop free whenever a slice has run SLICE_MS and whenever the
 * peer is not taking the bytes as fast (the stream's own backpressure: nothing more is serialized
 * until it drains). So the bytes held for a slow reader are the stream's buffer and one fragment,
 * not the whole reply, and the client receives one message, byte for byte `JSON.stringify`'s.
 */
import { performance } from 'node:perf_hooks';
import type { JsonPiece } from './json-slices.js';
import { textFragment } from './text-frame.js';

/** Characters of JSON gathered into one fragment (its bytes are at most three times that). */
export const FRAGMENT_CHARS = 256 * 1024;
/** The longest a slice of serializing runs before the event loop gets a turn, in ms. */
export const SLICE_MS = 10;

/** Where the fragments go: the stream under one WebSocket. */
export interface FragmentSink {
  /** Whether a data frame may still be written (no close frame has gone or come). */
  open(): boolean;
  /** Writes a frame; false when the stream holds enough (wait for `drained` before more). */
  write(frame: Buffer): boolean;
  /** Resolves when the stream's buffer has drained, or the stream closed. */
  drained(): Promise<void>;
}

export type StreamOutcome = 'sent' | 'closed';

/**
 * Writes `pieces` as one fragmented text message. 'closed': the connection closed (or began to)
 * before the last fragment, and the rest was not serialized.
 */
export async function writeStreamed(
  pieces: Iterator<JsonPiece>,
  sink: FragmentSink,
  now: () => number = () => performance.now(),
): Promise<StreamOutcome> {
  let sliceStart = now();
  const due = () => now() - sliceStart >= SLICE_MS;
  let next = pieces.next();
  let first = true;
  for (;;) {
    const parts: JsonPiece[] = [];
    let chars = 0;
    let bytes = false;
    // At least one piece per fragment, however slow the slice: no empty fragment is written.
    while (!next.done && (parts.length === 0 || (chars < FRAGMENT_CHARS && !due()))) {
      const piece = next.value;
      parts.push(piece);
      chars += piece.length;
      bytes ||= typeof piece !== 'string';
      next = pieces.next();
    }
    const last = next.done === true;
    if (!sink.open()) return 'closed';
    const room = sink.write(textFragment(fragmentPayload(parts, bytes), first, last));
    first = false;
    if (last) return 'sent';
    // The slice's clock restarts only once the loop has had its turn: a reader taking the bytes as
    // fast as they come (room after every fragment) must not keep one slice going for the whole
    // reply, fragment after fragment (a 55 MB history held the loop 0.3-0.5 s that way).
    if (!room) await sink.drained();
    else if (due()) await new Promise((resolve) => setImmediate(resolve));
    else continue;
    sliceStart = now();
  }
}

/**
 * A fragment's bytes. Pieces are whole (a string is whole characters, a JsonText piece whole
 * entries), so each fragment is whole UTF-8, as text fragments from here always were.
 */
function fragmentPayload(parts: readonly JsonPiece[], bytes: boolean): Buffer {
  if (!bytes) return Buffer.from(parts.join(''), 'utf8');
  if (parts.length === 1) {
    const only = parts[0] as Uint8Array;
    return Buffer.from(only.buffer, only.byteOffset, only.byteLength);
  }
  return Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : part)));
}
