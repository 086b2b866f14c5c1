/** The inbound backlog's rows as both backends read them (migration 005). */
import type { QueuedKind } from '../../domain/messaging/queue.js';

export interface BacklogRow {
  item_id: string;
  session_key: string;
  position: number;
  kind: QueuedKind;
  /** The MessageEvent as JSON. */
  event: string;
}
