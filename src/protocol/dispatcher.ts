/**
 * The method table and the one place where anything a handler throws becomes a wire response.
 *
 * Order of checks for every call: method exists → caller holds the capability → params carry no
 * identity → params match the method's closed schema → handler. A caller who lacks a capability
 * learns nothing about the method's params. A batch runs every message through the same checks on
 * its own; one message failing never affects another.
 */
import { z } from 'zod';
import { GatehouseError, GatewayError } from '../domain/errors.js';
import {
  internalError,
  invalidParams,
  methodNotFound,
  permissionDenied,
  RPC_REASONS,
  RpcError,
  type RpcReason,
} from './errors.js';
import {
  failure,
  parseFrame,
  success,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type Message,
} from './jsonrpc.js';
import type { Logger } from './logger.js';

/** What the dispatcher needs to know about a caller; surfaces extend it with their own fields. */
export interface CallerContext {
  readonly principal: { readonly capabilities: readonly string[] };
}

export interface MethodDefinition<Ctx extends CallerContext, Schema extends z.ZodType = z.ZodType> {
  /** A closed schema (`z.strictObject`): an unknown key is invalid_params, named. */
  readonly params: Schema;
  /** The capability the caller must hold, or null for methods any authenticated caller may use. */
  readonly capability: string | null;
  readonly handler: (params: z.output<Schema>, context: Ctx) => unknown;
}

/**
 * Keys that would let a caller claim who they are. Identities and capabilities are stamped by the
 * server at the upgrade gate (AUTH-1), so their mere presence in params is refused, whatever the
 * method's schema says.
 */
export const IDENTITY_PARAM_KEYS: readonly string[] = [
  'principal',
  'identity',
  'capabilities',
  'capability',
  'operator',
  'subject',
  'profile',
  'owner',
  'credentials',
];

export function identityKeysIn(params: unknown): string[] {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return [];
  return Object.keys(params).filter((key) => IDENTITY_PARAM_KEYS.includes(key));
}

/** Turns schema issues into one readable message and a structured list naming each path. */
export function zodToInvalidParams(error: z.ZodError): RpcError {
  const issues = error.issues.flatMap((issue) => {
    const at = ['params', ...issue.path.map(String)].join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ path: `${at}.${key}`, problem: 'unknown key' }));
    }
    return [{ path: at, problem: issue.message }];
  });
  const message = issues.map((issue) => `${issue.path}: ${issue.problem}`).join('; ');
  return invalidParams(message || 'invalid params', { issues });
}

/** One settled request, as the `settled` hook sees it. */
export interface SettledCall<Ctx> {
  method: string;
  /** The params as sent (an object, or {} when absent or not an object). */
  params: Record<string, unknown>;
  context: Ctx;
  /** The handler's result when it succeeded. */
  result: unknown;
  /** null when it succeeded; else the wire reason it was refused with. */
  reason: string | null;
}

export interface DispatchHooks<Ctx> {
  /**
   * The context one request runs with (its handler and `settled` see it): a copy of the
   * connection's carrying what belongs to this call alone, or the connection's own.
   */
  prepare?(method: string, params: Record<string, unknown>, context: Ctx): Ctx;
  /**
   * Runs after a call's capability and params are checked and before its handler, for methods that
   * need a capability; throwing refuses the call (the per-session fence of issue 30).
   */
  guard?(capability: string, params: Record<string, unknown>, context: Ctx): Promise<void>;
  /** Told each request's outcome before its answer is sent (the audit trail); never fails the call. */
  settled?(call: SettledCall<Ctx>): Promise<void>;
}

export class Dispatcher<Ctx extends CallerContext> {
  private readonly methods = new Map<string, MethodDefinition<Ctx>>();
  private hooks: DispatchHooks<Ctx> = {};

  constructor(private readonly logger: Logger) {}

  /** Sets the guard and settled hooks (once the services they call exist). */
  setHooks(hooks: DispatchHooks<Ctx>): this {
    this.hooks = hooks;
    return this;
  }

  register<Schema extends z.ZodType>(name: string, definition: MethodDefinition<Ctx, Schema>): this {
    if (this.methods.has(name)) throw new Error(`method ${name} is already registered`);
    this.methods.set(name, definition);
    return this;
  }

  has(name: string): boolean {
    return this.methods.has(name);
  }

  methodNames(): string[] {
    return [...this.methods.keys()];
  }

  /**
   * Handles one text frame; resolves to the response to send (an array for a batch), or null when
   * none is owed: a notification, or a batch of notifications only (JSON-RPC 2.0 §6).
   */
  async handleFrame(text: string, context: Ctx): Promise<JsonRpcResponse | JsonRpcResponse[] | null> {
    const frame = parseFrame(text);
    if (frame.kind !== 'batch') return this.handleMessage(frame, context);
    // Every handler starts in batch order (each runs synchronously up to its first await), like
    // separate frames would; the answers come back in the same order as the requests.
    const answers = await Promise.all(frame.messages.map((message) => this.handleMessage(message, context)));
    const owed = answers.filter((answer): answer is JsonRpcResponse => answer !== null);
    return owed.length > 0 ? owed : null;
  }

  private async handleMessage(message: Message, context: Ctx): Promise<JsonRpcResponse | null> {
    switch (message.kind) {
      case 'invalid':
        return failure(message.id, message.error);
      case 'notification':
        await this.handleNotification(message.notification, context);
        return null;
      case 'request':
        return this.dispatch(message.request, context);
    }
  }

  /** Runs one request; never rejects. */
  async dispatch(request: JsonRpcRequest, connection: Ctx): Promise<JsonRpcResponse> {
    const context = this.hooks.prepare?.(request.method, paramsOf(request.params), connection) ?? connection;
    let result: unknown;
    let refusal: RpcError | null = null;
    try {
      result = await this.invoke(request.method, request.params, context);
    } catch (error) {
      refusal = this.toRpcError(error, request.method);
    }
    await this.settle(request.method, request.params, context, result, refusal);
    return refusal === null ? success(request.id, result) : failure(request.id, refusal);
  }

  private async settle(
    method: string,
    rawParams: unknown,
    context: Ctx,
    result: unknown,
    refusal: RpcError | null,
  ): Promise<void> {
    if (!this.hooks.settled) return;
    const params = paramsOf(rawParams);
    try {
      await this.hooks.settled({ method, params, context, result, reason: refusal?.reason ?? null });
    } catch (error) {
      this.logger.error({ method, err: error }, 'the settled hook failed');
    }
  }

  /** Notifications run like requests but their outcome, good or bad, is only logged. */
  private async handleNotification(message: JsonRpcNotification, context: Ctx): Promise<void> {
    try {
      await this.invoke(message.method, message.params, context);
    } catch (error) {
      const rpc = this.toRpcError(error, message.method);
      this.logger.warn({ method: message.method, reason: rpc.reason }, 'notification failed');
    }
  }

  private async invoke(method: string, rawParams: unknown, context: Ctx): Promise<unknown> {
    const definition = this.methods.get(method);
    if (!definition) throw methodNotFound(method);
    if (definition.capability !== null && !context.principal.capabilities.includes(definition.capability)) {
      throw permissionDenied(`${method} needs the ${definition.capability} capability`, {
        capability: definition.capability,
      });
    }
    const params = rawParams === undefined ? {} : rawParams;
    if (Array.isArray(params)) throw invalidParams('params must be an object, not an array');
    const identityKeys = identityKeysIn(params);
    if (identityKeys.length > 0) {
      throw invalidParams(
        `identities are stamped by the server, never taken from params: ${identityKeys.join(', ')}`,
        { keys: identityKeys },
      );
    }
    const parsed = definition.params.safeParse(params);
    if (!parsed.success) throw zodToInvalidParams(parsed.error);
    if (definition.capability !== null && this.hooks.guard)
      await this.hooks.guard(definition.capability, params as Record<string, unknown>, context);
    return await definition.handler(parsed.data, context);
  }

  private toRpcError(error: unknown, method: string): RpcError {
    if (error instanceof RpcError) return error;
    if (error instanceof z.ZodError) return zodToInvalidParams(error);
    if (error instanceof GatewayError) return new RpcError(error.reason, error.message, error.details);
    if (error instanceof GatehouseError && error.reason in RPC_REASONS) {
      const reason = error.reason as RpcReason;
      // Storage failures name files and causes: those go to the log, the client gets the meaning.
      if (reason === 'storage_unavailable') {
        this.logger.error({ method, err: error }, 'storage unavailable');
        return new RpcError(reason, RPC_REASONS[reason].meaning);
      }
      return new RpcError(reason, error.message);
    }
    // The cause is logged for the operator; the client only learns that the server failed.
    this.logger.error({ method, err: error }, 'method failed unexpectedly');
    return internalError();
  }
}

/** A request's params as an object: {} when absent or not an object. */
function paramsOf(raw: unknown): Record<string, unknown> {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw)
    ? (raw as Record<string, unknown>)
    : {};
}
