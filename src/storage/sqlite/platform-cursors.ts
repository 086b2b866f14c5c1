/** The catch-up cursors on SQLite, on the session store's connection. */
import type Database from 'better-sqlite3';
import type { PlatformCursors } from '../../domain/ports/platform-cursors.js';
import { selectCursors, upsertCursor } from './ops/platform-cursors.js';

export class SqlitePlatformCursors implements PlatformCursors {
  constructor(private readonly db: Database.Database) {}

  readCursors(platform: string): Promise<ReadonlyMap<string, string>> {
    return Promise.resolve(selectCursors(this.db, platform));
  }

  saveCursor(platform: string, channelId: string, messageId: string): Promise<void> {
    upsertCursor(this.db, platform, channelId, messageId, new Date());
    return Promise.resolve();
  }
}
