/**
 * The agent cache (SPEC AGC-1..3): each session's live agent state kept in memory between turns —
 * the transcript as the model sees it (stored messages and their wire form), the system prompt and
 * the tool schemas — so a turn appends what is new instead of reloading and re-mapping the whole
 * history. Keyed by session: a local session's logical id, a chat lane's session key.
 *
 * The cache never holds anything the store lacks: an entry is filled only from the store, by
 * reading the messages after its last id (`loadTranscriptTail`). That is also its validity check:
 * when the transcript was rewound, rewritten or replaced (a new physical id, `transcript:replaced`),
 * the entry is dropped and rebuilt from the store, so a stale copy is never served. Eviction is
 * therefore always soft: the next turn rebuilds exactly what a fresh load gives (AGC-3).
 *
 * Decisions (LRU, TTL, pressure, protections) are pure functions in cache-policy.ts.
 */
import type { StoredMessage, TranscriptTail } from '../ports/session-store.js';
import { toWireMessage, toWireTool, type WireMessage, type WireTool } from '../../runtime/model/wire.js';
import type { ToolDefinition } from '../../runtime/types.js';
import {
  EVICTION_CAUSES,
  capacityVictims,
  pressureVictims,
  ttlVictims,
  type CacheLimits,
  type EntryFacts,
  type EvictionCause,
  type MemoryReading,
} from './cache-policy.js';

/** Where the cache reads transcripts from (the session store). */
export interface TranscriptSource {
  loadTranscriptTail(sessionId: string, afterId: number): Promise<TranscriptTail>;
}

/** What an agent is set up with besides its transcript. */
export interface AgentSetup {
  readonly systemPrompt: string;
  readonly tools: readonly ToolDefinition[];
}

/** A turn's hold on a session's agent: read its state, then release it once the turn ended. */
export interface AgentLease {
  readonly sessionId: string;
  readonly systemPrompt: string;
  readonly tools: readonly ToolDefinition[];
  readonly wireTools: readonly WireTool[];
  /** The visible stored transcript, in order. Read only: the cache owns it. */
  readonly messages: readonly StoredMessage[];
  /** `messages` mapped by toWireMessage, index for index. Read only. */
  readonly wire: readonly WireMessage[];
  /** The messages this acquire read from the store (all of them on a miss). */
  readonly appended: readonly StoredMessage[];
  /** Whether the entry was in the cache (a hit) or built from the store (a miss). */
  readonly hit: boolean;
  release(): void;
}

export interface AgentCacheStats {
  size: number;
  hits: number;
  misses: number;
  evictions: Record<EvictionCause, number>;
  /** Estimated bytes the entries hold. */
  bytes: number;
}

export interface AgentCacheOptions {
  source: TranscriptSource;
  limits: CacheLimits;
  /** Milliseconds of any monotonic clock; injectable for tests. */
  now?: () => number;
  /**
   * The memory reading of the pressure sweep. With it, the cache also sweeps when it has grown by
   * `pressureCheckBytes` since its last reading (a fast fill outruns the housekeeping interval);
   * one reading per that many bytes cached keeps the cost bounded.
   */
  readMemory?: () => MemoryReading;
  /** Default 4 MiB. */
  pressureCheckBytes?: number;
  /**
   * Called after a pressure sweep evicted agents, to return their memory to the system now (the
   * daemon forces a garbage collection, rate-limited: memory.ts garbageCollector). Without it the
   * evicted transcripts stay in the reading until the collector happens to run, and a fast fill
   * overshoots the budget by that garbage.
   */
  reclaim?: () => void;
}

export const PRESSURE_CHECK_BYTES = 4 * 1024 * 1024;

interface Entry {
  readonly key: string;
  sessionId: string;
  setup: AgentSetup;
  wireTools: WireTool[];
  messages: StoredMessage[];
  wire: WireMessage[];
  lastId: number;
  edits: number;
  bytes: number;
  lastUsedMs: number;
  busy: boolean;
  /** False while the entry is being caught up: it may not match the store yet. */
  flushed: boolean;
}

/** A rough size of what a message keeps alive (its strings, the objects around them). */
function messageBytes(message: StoredMessage): number {
  let bytes = 160 + 2 * (message.content?.length ?? 0);
  for (const call of message.tool_calls ?? [])
    bytes += 96 + 2 * (call.function.arguments.length + call.id.length);
  return bytes;
}

export class AgentCache {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;
  private hits = 0;
  private misses = 0;
  /** Estimated bytes added to entries since the last memory reading. */
  private grownSinceReading = 0;
  private readonly evictions: Record<EvictionCause, number> = { ttl: 0, pressure: 0, lru: 0, invalidated: 0 };

  constructor(private readonly options: AgentCacheOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  get limits(): CacheLimits {
    return this.options.limits;
  }

  /**
   * The session's agent for one turn, caught up with the store. The entry is held busy (never
   * evicted) until the lease is released. One turn per session at a time: the callers' turn slots
   * guarantee it, and a second acquire of a busy entry is refused.
   */
  async acquire(key: string, sessionId: string, setup: AgentSetup): Promise<AgentLease> {
    let entry = this.entries.get(key);
    if (entry?.busy) throw new Error(`agent ${key} is already in a turn`);
    if (entry && entry.sessionId !== sessionId) {
      this.evict(key, 'invalidated');
      entry = undefined;
    }
    if (entry) {
      entry.busy = true;
      entry.flushed = false;
      let tail: TranscriptTail;
      try {
        tail = await this.options.source.loadTranscriptTail(sessionId, entry.lastId);
      } catch (error) {
        this.evict(key, 'invalidated');
        throw error;
      }
      if (this.entries.get(key) === entry && tail.anchored && tail.edits === entry.edits) {
        this.hits++;
        if (entry.setup.systemPrompt !== setup.systemPrompt || entry.setup.tools !== setup.tools) {
          entry.setup = setup;
          entry.wireTools = setup.tools.map(toWireTool);
        }
        this.grew(this.append(entry, tail.messages));
        this.touch(entry);
        return this.lease(entry, tail.messages, true);
      }
      // Rewound, rewritten or dropped meanwhile: never serve it; rebuild from the store.
      if (this.entries.get(key) === entry) this.evict(key, 'invalidated');
    }
    return this.build(key, sessionId, setup);
  }

  /** Drops a session's agent (its transcript was replaced, or it changed behind the cache). */
  invalidate(key: string): boolean {
    return this.evict(key, 'invalidated');
  }

  /** TTL sweep: evicts agents idle past `idle_ttl_s`. Returns the keys evicted. */
  sweepIdle(): string[] {
    const victims = ttlVictims(this.facts(), this.options.limits, this.now());
    for (const key of victims) this.evict(key, 'ttl');
    return victims;
  }

  /** Pressure sweep (AGC-2) for one memory reading. Returns the keys evicted. */
  sweepPressure(memory: MemoryReading): string[] {
    this.grownSinceReading = 0;
    const victims = pressureVictims(this.facts(), this.options.limits, memory);
    for (const key of victims) this.evict(key, 'pressure');
    if (victims.length > 0) this.options.reclaim?.();
    return victims;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** Keys with an idle agent (for tests and operators). */
  keys(): string[] {
    return [...this.entries.keys()];
  }

  stats(): AgentCacheStats {
    let bytes = 0;
    for (const entry of this.entries.values()) bytes += entry.bytes;
    return {
      size: this.entries.size,
      hits: this.hits,
      misses: this.misses,
      evictions: Object.fromEntries(EVICTION_CAUSES.map((c) => [c, this.evictions[c]])) as Record<
        EvictionCause,
        number
      >,
      bytes,
    };
  }

  clear(): void {
    this.entries.clear();
  }

  private async build(key: string, sessionId: string, setup: AgentSetup): Promise<AgentLease> {
    this.misses++;
    const tail = await this.options.source.loadTranscriptTail(sessionId, 0);
    const entry: Entry = {
      key,
      sessionId,
      setup,
      wireTools: setup.tools.map(toWireTool),
      messages: [],
      wire: [],
      lastId: 0,
      edits: tail.edits,
      bytes: 0,
      lastUsedMs: this.now(),
      busy: true,
      flushed: false,
    };
    this.append(entry, tail.messages);
    // A concurrent build of the same key cannot happen (one turn per session); replace defensively.
    this.entries.delete(key);
    for (const victim of capacityVictims(this.facts(), this.options.limits, 1)) this.evict(victim, 'lru');
    this.entries.set(key, entry);
    this.grew(entry.bytes);
    return this.lease(entry, tail.messages, false);
  }

  /** Counts growth and sweeps for pressure once it passes pressureCheckBytes (never `busy` entries). */
  private grew(bytes: number): void {
    const read = this.options.readMemory;
    if (read === undefined) return;
    this.grownSinceReading += bytes;
    if (this.grownSinceReading < (this.options.pressureCheckBytes ?? PRESSURE_CHECK_BYTES)) return;
    this.sweepPressure(read());
  }

  /** Appends to the entry; returns the estimated bytes added. */
  private append(entry: Entry, messages: readonly StoredMessage[]): number {
    const before = entry.bytes;
    for (const message of messages) {
      entry.messages.push(message);
      entry.wire.push(toWireMessage(message));
      entry.bytes += messageBytes(message);
      entry.lastId = message.id;
    }
    return entry.bytes - before;
  }

  /** Most recently used last: Map order is the LRU order. */
  private touch(entry: Entry): void {
    entry.lastUsedMs = this.now();
    this.entries.delete(entry.key);
    this.entries.set(entry.key, entry);
  }

  private lease(entry: Entry, appended: readonly StoredMessage[], hit: boolean): AgentLease {
    let released = false;
    return {
      sessionId: entry.sessionId,
      systemPrompt: entry.setup.systemPrompt,
      tools: entry.setup.tools,
      wireTools: entry.wireTools,
      messages: entry.messages,
      wire: entry.wire,
      appended,
      hit,
      release: () => {
        if (released) return;
        released = true;
        entry.busy = false;
        entry.flushed = true;
        entry.lastUsedMs = this.now();
        // Over size because busy entries could not be evicted when it was built: settle it now.
        for (const victim of capacityVictims(this.facts(), this.options.limits)) this.evict(victim, 'lru');
      },
    };
  }

  private facts(): EntryFacts[] {
    return [...this.entries.values()].map((e) => ({
      key: e.key,
      lastUsedMs: e.lastUsedMs,
      busy: e.busy,
      flushed: e.flushed,
      bytes: e.bytes,
    }));
  }

  private evict(key: string, cause: EvictionCause): boolean {
    if (!this.entries.delete(key)) return false;
    this.evictions[cause]++;
    return true;
  }
}
