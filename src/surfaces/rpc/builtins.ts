/**
 * Built-in methods every authenticated caller may use (LOC-10): `ping` and `runtime.describe`.
 * `runtime.describe` reveals who the server is and what the caller may do, never a credential,
 * path or secret, and starts nothing. Its `storage` counters show how well group commit is batching.
 */
import { z } from 'zod';
import type { AgentCacheStats } from '../../domain/agents/agent-cache.js';
import { describePrincipal } from '../../domain/auth/principal.js';
import type { Dispatcher } from '../../protocol/dispatcher.js';
import type { RpcContext } from './connection.js';

/** The creation contract clients check before sending a launch option; filled by the gateway. */
export interface CreationContract {
  sources: string[];
  parameters: Record<string, unknown>;
  /** The model, provider and toolsets a session gets when `session.create` names none (no paths). */
  defaults?: { model: string; provider?: string; toolsets: string[] };
  /** The configured providers `provider` may name: names and models only, never a URL or a key. */
  providers?: { name: string; default: boolean; models: string[]; demo: boolean }[];
  /** Every toolset name `toolsets` may list. */
  toolsets?: string[];
}

export interface AuthorityDescription {
  /** The daemon instance (changes each start). */
  instance_id: string;
  /** The authority epoch opened durably by this start (REC-3). */
  epoch: number;
}

/** Group-commit counters since the daemon started (docs/storage.md, "Group commit"). */
export interface StorageCounters {
  /** Where sessions are stored (`store.kind`). */
  backend: 'sqlite' | 'postgres';
  /** False once a log flush failed (every write is refused until the daemon restarts). */
  writable: boolean;
  /** Group transactions committed, and the store operations they held. */
  commit_batches: number;
  committed_operations: number;
  /** Write-ahead log flushes that acknowledged them, and how many ran on the calling thread. */
  log_flushes: number;
  inline_flushes: number;
  /** Background checkpoints of the log (a thread of its own), and how many of them failed. */
  checkpoints: number;
  checkpoint_failures: number;
}

/** What the daemon runs with, for status views (the dashboard's status page, `gatehouse status`). */
export interface GatewayDescription {
  /** The package version. */
  version: string;
  started_at: string;
  uptime_s: number;
  /** The default model; `demo` is true for the built-in scripted stand-in (no provider account). */
  model: { name: string; provider: string; demo: boolean };
  /** The name of the provider sessions get by default (`runtime.describe` session_create.providers). */
  default_provider?: string;
  /**
   * Turns running now, local and chat-platform alike, turns waiting for one of the
   * `limits.max_concurrent_turns` places, and that limit.
   */
  turns?: { running: number; waiting: number; limit: number };
  /** Each chat platform adapter and its state (empty when none is enabled). */
  platforms: { platform: string; state: string; detail: string | null; account: string | null }[];
}

export interface BuiltinSources {
  authority: () => AuthorityDescription;
  creationContract: () => CreationContract;
  /** Absent where there is no store (RPC tests). */
  storage?: () => StorageCounters;
  /** Absent where there is no agent cache (RPC tests). */
  agentCache?: () => AgentCacheStats;
  /** Absent outside the daemon (RPC tests). */
  gateway?: () => GatewayDescription;
}

export const PROTOCOL_VERSION = 'gatehouse.v1';

export function registerBuiltinMethods(dispatcher: Dispatcher<RpcContext>, sources: BuiltinSources): void {
  dispatcher.register('ping', {
    params: z.strictObject({}),
    capability: null,
    handler: () => ({ pong: true }),
  });
  dispatcher.register('runtime.describe', {
    params: z.strictObject({}),
    capability: null,
    handler: (_params, context) => {
      const authority = sources.authority();
      const caller = describePrincipal(context.principal);
      // The gateway's own state (storage, agent cache, platforms, version) is an operator's view.
      const operator = caller.capabilities.includes('session:operator');
      return {
        protocol: PROTOCOL_VERSION,
        authority: { instance_id: authority.instance_id, profile: caller.profile },
        epoch: authority.epoch,
        principal: {
          subject: caller.subject,
          provider: caller.provider,
          ...(caller.name !== undefined ? { name: caller.name } : {}),
        },
        capabilities: caller.capabilities,
        // A connection bound to named sessions (a worker-adoption ticket) says which.
        ...(caller.sessions !== undefined ? { sessions: caller.sessions } : {}),
        session_create: sources.creationContract(),
        ...(operator && sources.storage ? { storage: sources.storage() } : {}),
        ...(operator && sources.agentCache ? { agent_cache: sources.agentCache() } : {}),
        ...(operator && sources.gateway ? { gateway: sources.gateway() } : {}),
      };
    },
  });
}
