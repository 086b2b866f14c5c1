/**
 * A whole WebSocket text frame as a server sends it (RFC 6455 §5.2: FIN set, opcode 1, unmasked,
 * one message in one frame). A server's frames carry no mask, so the same bytes are right for every
 * connection: a session event is framed once and written as it is to each of its viewers' streams
 * (issue 32 aim 5). Nothing else is framed here; replies and the rest go through `ws`.
 */
const FIN_TEXT = 0x81;

export function textFrame(payload: Buffer): Buffer {
  const length = payload.length;
  const headerLength = length < 126 ? 2 : length < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(headerLength + length);
  frame[0] = FIN_TEXT;
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
