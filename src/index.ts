/**
 * The `gatehouse` package entry: the session model, the store and the runtime as a library.
 * Everything exported here is public API and documented in docs/api.md.
 */
export * from './domain/vocabulary.js';
export type * from './runtime/types.js';
export * from './domain/errors.js';
export * from './domain/session/lifecycle.js';
export type * from './storage/session-store.js';
export { SqliteSessionStore } from './storage/sqlite/session-store.js';
export {
  openDatabase,
  SYNCHRONOUS_FULL,
  type OpenOptions,
  type SqliteDatabase,
} from './storage/sqlite/database.js';
export type { Migration } from './storage/sqlite/migration.js';
