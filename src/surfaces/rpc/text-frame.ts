/**
 * WebSocket text frames as a server sends them (RFC 6455 §5.2: unmasked). A server's frames carry
 * no mask, so the same bytes are right for every connection: a session event is framed once and
 * written as it is to each of its viewers' streams (issue 32 aim 5). A reply too long to serialize
 * in one go is sent as one message in several fragments (§5.4: a text frame without FIN, then
 * continuation frames, the last with FIN), each framed here (streamed-reply.ts; issue 32 aim 3).
 */
const FIN = 0x80;
const OPCODE_CONTINUATION = 0x0;
const OPCODE_TEXT = 0x1;

/** A whole message in one frame. */
export function textFrame(payload: Buffer): Buffer {
  return frame(payload, FIN | OPCODE_TEXT);
}

/** One fragment of a text message: the first is a text frame, the rest continuations; the last has FIN. */
export function textFragment(payload: Buffer, first: boolean, last: boolean): Buffer {
  return frame(payload, (last ? FIN : 0) | (first ? OPCODE_TEXT : OPCODE_CONTINUATION));
}

function frame(payload: Buffer, head: number): Buffer {
  const length = payload.length;
  const headerLength = length < 126 ? 2 : length < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(headerLength + length);
  frame[0] = head;
  if (length < 126) {
    frame[1] = length;
  } else if (length < 65536) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(length), 2);
  }
  payload.copy(frame, headerLength);
  return frame;
}
