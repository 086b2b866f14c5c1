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
export { toolEnvironment, TOOL_ENV_ALLOW, type ToolEnvSettings } from './runtime/tools/env.js';
export { assessCommand, type Assessment } from './runtime/approvals/assess.js';
export * from './runtime/approvals/decide.js';
export { classifyCommand, type Classification, type ClassifyOptions } from './runtime/approvals/detector.js';
export { DANGER_RULES, LINE_RULES, type DangerRule } from './runtime/approvals/rules.js';
export { redactSecrets } from './runtime/approvals/redact.js';
export * from './runtime/approvals/broker.js';
export * from './runtime/approvals/always-store.js';
// Protocol, authentication and the RPC/control surfaces (issue 4, AUTH-1..6).
export * from './protocol/errors.js';
export * from './protocol/jsonrpc.js';
export * from './protocol/dispatcher.js';
export type { Logger } from './protocol/logger.js';
export * from './domain/auth/principal.js';
export * from './domain/auth/tickets.js';
export { hashPassword, verifyPassword } from './domain/auth/password.js';
export { startRpcServer, RemoteBindRefusedError, WS_PATH } from './surfaces/rpc/server.js';
export type { RpcServer, RpcServerOptions } from './surfaces/rpc/server.js';
export { ViewerConnection, DROPPED_NOTIFICATION } from './surfaces/rpc/connection.js';
export type { RpcContext, ConnectionLimits, ConnectionState } from './surfaces/rpc/connection.js';
export type { RpcSurfaceEvents, CloseCause } from './surfaces/rpc/events.js';
export {
  SUBPROTOCOL,
  TICKET_SUBPROTOCOL_PREFIX,
  INTERNAL_SUBPROTOCOL_PREFIX,
  SESSION_COOKIE,
} from './surfaces/rpc/gate.js';
export { registerBuiltinMethods } from './surfaces/rpc/builtins.js';
export type { CreationContract, AuthorityDescription, BuiltinSources } from './surfaces/rpc/builtins.js';
export { startControlServer, ControlSocketError } from './surfaces/control/server.js';
export type { ControlServer, ControlServerOptions } from './surfaces/control/server.js';
export {
  requestTicket,
  requestTicketPatiently,
  identify,
  controlRequest,
  ControlRequestError,
} from './surfaces/control/client.js';
export type { ControlIdentity, TicketReply } from './surfaces/control/wire.js';
export { runDaemon } from './daemon/daemon.js';
export { defaultServices } from './daemon/services/index.js';
export type { DaemonService, DaemonContext, DaemonHandle, GatewayInfo, Advertised } from './daemon/daemon.js';
export { Lifecycle, transition, IllegalTransition } from './daemon/lifecycle.js';
export type { LifecycleState, LifecycleEvent, LifecycleEvents } from './daemon/lifecycle.js';
export { loadConfig, parseConfig, describeModel } from './daemon/config.js';
export { maskConfig } from './daemon/config-secrets.js';
export type { LoadedConfig } from './daemon/config.js';
export type { GatehouseConfig } from './daemon/config-schema.js';
export { homeLayout, resolveHomeDir, initHome } from './daemon/home.js';
export type { HomeLayout } from './daemon/home.js';
export { DaemonError } from './daemon/errors.js';
export type { DaemonErrorCode } from './daemon/errors.js';
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
export * from './domain/session/lifecycle.js';
export type * from './domain/ports/session-store.js';
export { SqliteSessionStore } from './storage/sqlite/session-store.js';
export {
  openDatabase,
  SYNCHRONOUS_FULL,
  type OpenOptions,
  type SqliteDatabase,
} from './storage/sqlite/database.js';
export type { Migration } from './storage/sqlite/migration.js';
export {
  closeDanglingToolCalls,
  GATEWAY_STOP_MARKER,
  GATEWAY_STOP_RESULT,
  type TranscriptRepair,
} from './runtime/transcript-repair.js';

// The terminal chat's pure parts (UX-1): rendering, typed answers, catch-up decisions.
export { ChatController } from './surfaces/cli/chat/controller.js';
export type { ChatOptions } from './surfaces/cli/chat/controller.js';
export { renderEvent, renderHistory, banner, INITIAL_RENDER } from './surfaces/cli/chat/render.js';
export { parseApprovalAnswer, parseClarifyAnswer, promptReply } from './surfaces/cli/chat/answers.js';
export { classifyArrival, planResync, submissionAfterSnapshot } from './surfaces/cli/chat/cursor.js';
export type * from './domain/messaging/adapter.js';
export { allowlistAuthorizer } from './domain/messaging/adapter.js';
export * as messageQueue from './domain/messaging/queue.js';
export { parseCommand, HELP_TEXT, type ChatCommand } from './domain/messaging/commands.js';
export { splitMessage } from './domain/messaging/split.js';
export {
  planRecovery,
  isSilentReply,
  recoveredReplyText,
  STUCK_LOOP_RESTARTS,
} from './domain/messaging/recovery.js';
export type * from './domain/ports/delivery-ledger.js';
export { targetOfOrigin } from './domain/ports/delivery-ledger.js';
export { SqliteDeliveryLedger } from './storage/sqlite/delivery-ledger.js';
export {
  MessagingGateway,
  type MessagingGatewayOptions,
  type GatewayState as MessagingGatewayState,
} from './domain/messaging/gateway.js';
export type { MessagingEvents } from './domain/messaging/events.js';
export {
  PlatformRegistry,
  PlatformSetupError,
  builtinPlatforms,
  type AdapterFactory,
  type PlatformConfig,
} from './surfaces/platforms/registry.js';
export { TelegramAdapter, type TelegramAdapterOptions } from './surfaces/platforms/telegram/adapter.js';
export { messagingService, type MessagingService } from './daemon/services/messaging.js';
