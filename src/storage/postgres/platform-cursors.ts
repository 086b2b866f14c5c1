/** The catch-up cursors on PostgreSQL, on the session store's connection. */
import type { BotFence } from '../../domain/ports/cluster-store.js';
import type { PlatformCursors } from '../../domain/ports/platform-cursors.js';
import type { PgDatabase } from './database.js';
import { checkBotFence } from './ops/leases.js';
import { selectCursors, upsertCursor } from './ops/platform-cursors.js';

export class PostgresPlatformCursors implements PlatformCursors {
  /** In a cluster (SCL-1): a cursor advances only while this instance holds the bot leases. */
  private bots: BotFence | null = null;

  constructor(private readonly db: PgDatabase) {}

  fenceByBots(fence: BotFence): void {
    this.bots = fence;
  }

  readCursors(platform: string): Promise<ReadonlyMap<string, string>> {
    return this.db.exclusive((sql) => selectCursors(sql, platform));
  }

  saveCursor(platform: string, channelId: string, messageId: string): Promise<void> {
    return this.db.transaction(async (sql) => {
      await checkBotFence(sql, this.bots);
      await upsertCursor(sql, platform, channelId, messageId, new Date());
    });
  }
}
