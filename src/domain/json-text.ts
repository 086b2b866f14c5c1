/**
 * A JSON array already serialized, as UTF-8 (issue 32 aim 3): the whole transcript of a long
 * session, read and serialized on a thread of the store's own (storage/sqlite/transcript-json.ts)
 * instead of on the event loop, which would stop every other session for the seconds 100,000
 * messages take. A reply carrying one (`session.resume`, `session.history`) is written as it is by
 * the RPC surface (surfaces/rpc/json-slices.ts): its bytes go to the socket without being parsed
 * again. Anything else that serializes it gets the same text through `toJSON`, slowly.
 */
export class JsonText {
  private onRelease: (() => void) | undefined;

  /**
   * @param length how many entries the array has
   * @param body the array's entries, comma-separated, without the brackets, in pieces cut between
   *   entries (each piece is whole UTF-8 on its own)
   * @param onRelease told once, by `release()`, that the bytes are no longer needed (the reader that
   *   made them counts the bytes it has handed out and not had back)
   */
  constructor(
    readonly length: number,
    readonly body: readonly Uint8Array[],
    onRelease?: () => void,
  ) {
    this.onRelease = onRelease;
  }

  /** The same array with `entries` before its own ones (releasing either releases both). */
  prepend(entries: readonly unknown[]): JsonText {
    if (entries.length === 0) return this;
    const head = entries.map((entry) => JSON.stringify(entry)).join(',');
    const piece = Buffer.from(this.length > 0 ? `${head},` : head, 'utf8');
    return new JsonText(entries.length + this.length, [piece, ...this.body], () => this.release());
  }

  /** Says the bytes are written (or will never be): the first call tells the maker, later ones nothing. */
  release(): void {
    const onRelease = this.onRelease;
    this.onRelease = undefined;
    onRelease?.();
  }

  /** The array as values: what `JSON.stringify` of it writes (and a caller that needs the entries). */
  toJSON(): unknown[] {
    return JSON.parse(`[${Buffer.concat(this.body).toString('utf8')}]`) as unknown[];
  }
}
