/**
 * The `gatehouse` package entry: the session model, the store and the runtime as a library.
 * Everything exported here is public API and documented in docs/api.md.
 */
export * from './domain/vocabulary.js';
export type * from './runtime/types.js';
export * from './domain/errors.js';
export * from './domain/session/source.js';
export * from './domain/session/key.js';
export * from './domain/session/whatsapp.js';
export * from './domain/session/context.js';
