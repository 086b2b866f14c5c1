/**
 * A small Server-Sent Events parser for chat-completion streams. Bytes may be split anywhere:
 * inside a UTF-8 sequence, inside a line, between `\r` and `\n`. Only `data:` fields matter to us;
 * `event:`, `id:`, `retry:` and comments are ignored.
 */
export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private buffer = '';
  private data: string[] = [];
  /** The previous chunk ended in `\r`: a `\n` starting the next chunk belongs to the same line end. */
  private pendingCr = false;

  /** Feeds bytes (or text); returns the data payloads of every event completed by them. */
  push(chunk: Uint8Array | string): string[] {
    let text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    this.buffer += text;
    const events: string[] = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const ch = this.buffer[i];
      if (ch !== '\n' && ch !== '\r') continue;
      this.line(this.buffer.slice(start, i), events);
      if (ch === '\r') {
        if (i + 1 === this.buffer.length) this.pendingCr = true;
        else if (this.buffer[i + 1] === '\n') i++;
      }
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /** The stream ended: returns a final event that was not followed by a blank line. */
  end(): string[] {
    const events: string[] = [];
    const rest = this.decoder.decode();
    if (rest) events.push(...this.push(rest));
    if (this.buffer) this.line(this.buffer, events);
    this.buffer = '';
    if (this.data.length > 0) events.push(this.data.join('\n'));
    this.data = [];
    return events;
  }

  private line(line: string, events: string[]): void {
    if (line === '') {
      if (this.data.length > 0) events.push(this.data.join('\n'));
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    if (field !== 'data') return;
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    this.data.push(value);
  }
}
