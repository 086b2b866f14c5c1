/** The catch-up cursors on PostgreSQL, on the session store's connection. */
import type { PlatformCursors } from '../platform-cursors.js';
import type { PgDatabase } from './database.js';
import { selectCursors, upsertCursor } from './ops/platform-cursors.js';

export class PostgresPlatformCursors implements PlatformCursors {
  constructor(private readonly db: PgDatabase) {}

  readCursors(platform: string): Promise<ReadonlyMap<string, string>> {
    return this.db.exclusive((sql) => selectCursors(sql, platform));
  }

  saveCursor(platform: string, channelId: string, messageId: string): Promise<void> {
    return this.db.transaction((sql) => upsertCursor(sql, platform, channelId, messageId, new Date()));
  }
}
