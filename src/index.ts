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
export * from './runtime/tools/registry.js';
export {
  createTerminalTool,
  terminalTool,
  TERMINAL_DEFAULTS,
  type TerminalOptions,
} from './runtime/tools/terminal.js';
export { clarifyTool } from './runtime/tools/clarify.js';
export { projectTools, readFileTool, listDirectoryTool, writeFileTool } from './runtime/tools/project.js';
export { scrubEnvironment, isSecretName } from './runtime/tools/env.js';
export { classifyCommand, type Classification, type ClassifyOptions } from './runtime/approvals/detector.js';
export { DANGER_RULES, LINE_RULES, type DangerRule } from './runtime/approvals/rules.js';
export { redactSecrets } from './runtime/approvals/redact.js';
export * from './runtime/approvals/broker.js';
export * from './runtime/approvals/always-store.js';
