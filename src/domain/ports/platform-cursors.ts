/**
 * Catch-up cursors (migration 013): per platform and channel, the newest message id up to which
 * every message was taken by the gateway. An adapter whose platform does not redeliver what was
 * said while it was down (Discord) reads the channel after its cursor at start; the inbound ledger
 * drops what it finds there that was taken already.
 */
export interface PlatformCursors {
  /** Every channel's cursor of the platform. */
  readCursors(platform: string): Promise<ReadonlyMap<string, string>>;
  /** Sets the channel's cursor; the adapter only ever moves it forward. */
  saveCursor(platform: string, channelId: string, messageId: string): Promise<void>;
}
