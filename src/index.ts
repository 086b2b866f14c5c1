/**
 * The `gatehouse` package entry: the session model, the store and the runtime as a library.
 * Everything exported here is public API and documented in docs/api.md.
 */
export * from './domain/vocabulary.js';
export type * from './runtime/types.js';
export { ModelClient } from './runtime/model/client.js';
export type {
  ChatModel,
  ChatRequest,
  ChatResult,
  ModelClientOptions,
  ModelDelta,
} from './runtime/model/client.js';
export { ModelError, MODEL_ERROR_KINDS, type ModelErrorKind } from './runtime/model/errors.js';
export type { WireMessage, WireTool } from './runtime/model/wire.js';
export { runTurn, ADMISSION_HEADER } from './runtime/runner.js';
export type { RunTurnOptions, TurnResult } from './runtime/runner.js';
export { startDemoModel, runDemoModelCommand } from './runtime/demo/server.js';
export type { DemoModelOptions, DemoModelServer, RecordedRequest } from './runtime/demo/server.js';
export { inProcessDemoModel, demoChunks, demoCompletion } from './runtime/demo/model.js';
export { DEMO_MODEL_ID, DEMO_LABEL } from './runtime/demo/script.js';
