/**
 * A JSON array already serialized, as UTF-8 (issue 32 aim 3): the whole transcript of a long
 * session, read and serialized on a thread of the store's own (storage/sqlite/transcript-json.ts)
 * instead of on the event loop, which would stop every other session for the seconds 100,000
 * messages take. A reply carrying one (`session.resume`, `session.history`) is written as it is by
 * the RPC surface (surfaces/rpc/json-slices.ts): its bytes go to the socket without being parsed
 * again. Anything else that serializes it gets the same text through `toJSON`, slowly.
 */
export class JsonText {
  /**
   * @param length how many entries the array has
   * @param body the array's entries, comma-separated, without the brackets, in pieces cut between
   *   entries (each piece is whole UTF-8 on its own)
   */
  constructor(
    readonly length: number,
    readonly body: readonly Uint8Array[],
  ) {}

  /** The same array with `entries` before its own ones. */
  prepend(entries: readonly unknown[]): JsonText {
    if (entries.length === 0) return this;
    const head = entries.map((entry) => JSON.stringify(entry)).join(',');
    const piece = Buffer.from(this.length > 0 ? `${head},` : head, 'utf8');
    return new JsonText(entries.length + this.length, [piece, ...this.body]);
  }

  /** The array as values: what `JSON.stringify` of it writes (and a caller that needs the entries). */
  toJSON(): unknown[] {
    return JSON.parse(`[${Buffer.concat(this.body).toString('utf8')}]`) as unknown[];
  }
}
