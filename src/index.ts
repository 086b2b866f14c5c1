/**
 * The `gatehouse` package entry: the session model, the store and the runtime as a library.
 * Everything exported here is public API and documented in docs/api.md.
 */
export * from './domain/vocabulary.js';
export type * from './runtime/types.js';
export { runDaemon } from './daemon/daemon.js';
export type { DaemonService, DaemonContext, DaemonHandle, GatewayInfo, Advertised } from './daemon/daemon.js';
export { Lifecycle, transition, IllegalTransition } from './daemon/lifecycle.js';
export type { LifecycleState, LifecycleEvent, LifecycleEvents } from './daemon/lifecycle.js';
export { loadConfig, parseConfig, maskConfig, describeModel } from './daemon/config.js';
export type { GatehouseConfig, LoadedConfig } from './daemon/config.js';
export { homeLayout, resolveHomeDir, initHome } from './daemon/home.js';
export type { HomeLayout } from './daemon/home.js';
export { DaemonError } from './daemon/errors.js';
export type { DaemonErrorCode } from './daemon/errors.js';
