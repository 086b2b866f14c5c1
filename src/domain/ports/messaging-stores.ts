/**
 * What the messaging gateway stores through (chat platforms): the session store, the delivery
 * ledger and the catch-up cursors, all on one database so a turn's reply, marker and transcript
 * commit together. Each backend builds the three on its own connection; the gateway sees only
 * these contracts, never which backend is under them.
 */
import type { BotFence } from './cluster-store.js';
import type { DeliveryLedger } from './delivery-ledger.js';
import type { PlatformCursors } from './platform-cursors.js';
import type { SessionStore } from './session-store.js';

export interface MessagingStores {
  readonly sessions: SessionStore;
  readonly ledger: DeliveryLedger;
  readonly cursors: PlatformCursors;
  /**
   * In a cluster (PostgreSQL only): from now on the ledger's and the cursors' writes commit only
   * while this instance holds its bots' leases (docs/cluster.md, "Chat platforms in a cluster").
   */
  fenceByBots?(fence: BotFence): void;
}
