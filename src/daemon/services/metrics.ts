/**
 * The Prometheus metrics of the daemon (docs/observability.md lists every series). Loaded only when
 * `metrics.enabled`: the gateway service imports this file, and with it prom-client, at start.
 *
 * Two kinds of series. Gauges (and the agent cache's counters) read the state the daemon already
 * keeps when Prometheus scrapes: nothing is counted twice and nothing drifts. Counters and
 * histograms of things that happen listen to the typed lifecycle events the engines, the provider
 * table and the store emit anyway. No label carries user text or an unbounded id: engines,
 * outcomes, platforms, causes, and providers and models as configured (anything else is `other`).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AgentCache } from '../../domain/agents/agent-cache.js';
import type { ClusterMember } from '../../domain/cluster/member.js';
import type { TypedEmitter } from '../../domain/events/typed-emitter.js';
import type { LocalSessions } from '../../domain/local/service.js';
import type { MessagingEvents } from '../../domain/messaging/events.js';
import type { PromptBroker } from '../../runtime/approvals/broker.js';
import type { MetricsRoute } from '../../surfaces/rpc/metrics-route.js';
import type { Runtime } from './runtime.js';
import type { GatewayStores } from './stores.js';

export interface MetricsSources {
  local: LocalSessions;
  runtime: Runtime;
  agents: AgentCache;
  stores: GatewayStores;
  /** WebSocket connections open on the listener now. */
  connections: () => number;
  /** This instance's cluster member, with cluster.enabled; else null. */
  member: () => ClusterMember | null;
  /** The enabled chat platforms: their ledger series exist (at 0) before their first reply. */
  platforms: readonly string[];
}

export interface GatewayMetrics extends MetricsRoute {
  /** The messaging gateway's events, once it runs (null when it stops). */
  watchMessaging(events: TypedEmitter<MessagingEvents> | null): void;
  close(): void;
}

/** Seconds: a turn runs from under a second (the demo model) to many minutes (tools, approvals). */
const TURN_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];
const MODEL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160];
const COMMIT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

export function createMetrics(sources: MetricsSources, key: string | null): GatewayMetrics {
  const registry = new Registry();
  const registers = [registry];
  // process_* and nodejs_* (event-loop delay among them: nodejs_eventloop_lag_*).
  collectDefaultMetrics({ register: registry });
  const { local, runtime, agents, stores } = sources;
  const off: (() => void)[] = [];

  const turns = new Counter({
    name: 'gatehouse_turns_total',
    help: 'Turns ended, by engine (local, platform) and outcome (completed, failed, cancelled, interrupted).',
    labelNames: ['engine', 'outcome'] as const,
    registers,
  });
  const turnSeconds = new Histogram({
    name: 'gatehouse_turn_duration_seconds',
    help: 'Seconds from a turn being claimed (local) or started (platform) to its end, by engine.',
    labelNames: ['engine'] as const,
    buckets: TURN_BUCKETS,
    registers,
  });
  const modelSeconds = new Histogram({
    name: 'gatehouse_model_call_duration_seconds',
    help: 'Seconds of one model call, retries included, by provider, model and result (ok, error).',
    labelNames: ['provider', 'model', 'result'] as const,
    buckets: MODEL_BUCKETS,
    registers,
  });
  const tokens = new Counter({
    name: 'gatehouse_model_tokens_total',
    help: 'Tokens the providers reported, by provider, model and kind (input, output, cache_read, cache_write).',
    labelNames: ['provider', 'model', 'kind'] as const,
    registers,
  });
  const cost = new Counter({
    name: 'gatehouse_model_cost_usd_total',
    help: 'US dollars the model calls cost, reported by the provider or estimated from prices (docs/cost.md), by provider and model.',
    labelNames: ['provider', 'model'] as const,
    registers,
  });
  const unpriced = new Counter({
    name: 'gatehouse_model_calls_unpriced_total',
    help: 'Model calls whose cost is unknown (no reported cost, no price), by provider and model.',
    labelNames: ['provider', 'model'] as const,
    registers,
  });
  const admissions = new Counter({
    name: 'gatehouse_admissions_total',
    help: 'Prompts admitted: local admissions stored, platform messages accepted (engine).',
    labelNames: ['engine'] as const,
    registers,
  });
  const compressions = new Counter({
    name: 'gatehouse_compressions_total',
    help: 'Transcript compressions, by engine and result (done, failed).',
    labelNames: ['engine', 'result'] as const,
    registers,
  });
  const recoveries = new Counter({
    name: 'gatehouse_recoveries_total',
    help: 'Interrupted turns found by recovery, by engine and result (unknown, resumed, stale, suspended).',
    labelNames: ['engine', 'result'] as const,
    registers,
  });
  const takeovers = new Counter({
    name: 'gatehouse_cluster_takeovers_total',
    help: 'Sessions this instance took over from another (cluster).',
    registers,
  });
  let droppedSpans = 0;
  new Counter({
    name: 'gatehouse_trace_spans_dropped_total',
    help: 'Trace spans dropped because the export queue was full (a slow or unreachable collector); 0 without telemetry.',
    registers,
    collect() {
      const now = runtime.tracing?.dropped() ?? 0;
      if (now > droppedSpans) this.inc(now - droppedSpans);
      droppedSpans = now;
    },
  });
  const commitSeconds = new Histogram({
    name: 'gatehouse_store_commit_duration_seconds',
    help: 'Seconds of one group commit, from its transaction start to durable, by backend.',
    labelNames: ['backend'] as const,
    buckets: COMMIT_BUCKETS,
    registers,
  });

  new Gauge({
    name: 'gatehouse_queue_depth',
    help: 'Prompts waiting for their turn: queued local admissions and platform backlog rows (engine).',
    labelNames: ['engine'] as const,
    registers,
    async collect() {
      let queued = 0;
      for (const id of await stores.local.sessionsWithQueued()) {
        queued += (await stores.local.unsettled(id)).filter((a) => a.state === 'queued').length;
      }
      this.set({ engine: 'local' }, queued);
      this.set({ engine: 'platform' }, (await stores.messaging.ledger.listBacklog()).length);
    },
  });
  new Gauge({
    name: 'gatehouse_sessions_live',
    help: 'Local sessions held in memory now (a hub: viewers, a queue or a turn).',
    registers,
    collect() {
      this.set(local.hubCount);
    },
  });
  new Gauge({
    name: 'gatehouse_turns_running',
    help: 'Local sessions with a turn being claimed, run or waited for now.',
    registers,
    collect() {
      this.set(local.scheduler.active().length);
    },
  });
  new Gauge({
    name: 'gatehouse_viewers',
    help: 'Viewers attached to local sessions now.',
    registers,
    collect() {
      this.set(local.viewerCount);
    },
  });
  new Gauge({
    name: 'gatehouse_connections',
    help: 'WebSocket connections open on the listener now.',
    registers,
    collect() {
      this.set(sources.connections());
    },
  });
  const brokers: [string, PromptBroker][] = [
    ['local', runtime.prompts],
    ['platform', runtime.chatPrompts],
  ];
  new Gauge({
    name: 'gatehouse_approvals_waiting',
    help: 'Approval and clarify prompts waiting for an answer, by engine.',
    labelNames: ['engine'] as const,
    registers,
    collect() {
      for (const [engine, broker] of brokers) this.set({ engine }, broker.waiting().count);
    },
  });
  new Gauge({
    name: 'gatehouse_approval_oldest_age_seconds',
    help: 'Seconds the oldest waiting prompt has waited (0 when none), by engine.',
    labelNames: ['engine'] as const,
    registers,
    collect() {
      const now = Date.now();
      for (const [engine, broker] of brokers) {
        const oldest = broker.waiting().oldest;
        this.set({ engine }, oldest === null ? 0 : Math.max(0, (now - Date.parse(oldest)) / 1000));
      }
    },
  });
  new Gauge({
    name: 'gatehouse_delivery_undelivered',
    help: 'Platform replies on the delivery ledger not yet sent, by platform.',
    labelNames: ['platform'] as const,
    registers,
    async collect() {
      const counts = new Map<string, number>();
      for (const d of await stores.messaging.ledger.listUndelivered()) {
        counts.set(d.target.platform, (counts.get(d.target.platform) ?? 0) + 1);
      }
      this.reset();
      for (const platform of sources.platforms) this.set({ platform }, 0);
      for (const [platform, n] of counts) this.set({ platform }, n);
    },
  });
  new Gauge({
    name: 'gatehouse_agent_cache_entries',
    help: 'Agents (transcripts in memory) in the agent cache.',
    registers,
    collect() {
      this.set(agents.stats().size);
    },
  });
  new Gauge({
    name: 'gatehouse_agent_cache_bytes',
    help: 'Estimated bytes the agent cache holds.',
    registers,
    collect() {
      this.set(agents.stats().bytes);
    },
  });
  new Counter({
    name: 'gatehouse_agent_cache_evictions_total',
    help: 'Agents evicted from the cache, by cause (ttl, pressure, lru, invalidated).',
    labelNames: ['cause'] as const,
    registers,
    collect() {
      this.reset();
      for (const [cause, n] of Object.entries(agents.stats().evictions)) this.inc({ cause }, n);
    },
  });
  new Gauge({
    name: 'gatehouse_cluster_leases_held',
    help: 'Session leases this instance holds (cluster; 0 without one).',
    registers,
    collect() {
      this.set(sources.member()?.heldCount ?? 0);
    },
  });

  // Zero-valued series for the known label values, so a dashboard sees them before the first event.
  for (const engine of ['local', 'platform']) {
    admissions.inc({ engine }, 0);
    turns.inc({ engine, outcome: 'completed' }, 0);
    compressions.inc({ engine, result: 'done' }, 0);
    for (const result of ['unknown', 'resumed']) recoveries.inc({ engine, result }, 0);
  }
  takeovers.inc(0);

  // Local engine.
  const claimedAt = new Map<string, number>();
  off.push(
    local.events.on('admission:committed', () => admissions.inc({ engine: 'local' })),
    local.events.on('turn:claimed', (e) => claimedAt.set(e.admission_id, performance.now())),
    local.events.on('turn:settled', (e) => {
      const started = claimedAt.get(e.admission_id);
      claimedAt.delete(e.admission_id);
      if (!e.accepted) return;
      turns.inc({ engine: 'local', outcome: e.outcome });
      if (started !== undefined)
        turnSeconds.observe({ engine: 'local' }, (performance.now() - started) / 1000);
    }),
    local.events.on('transcript:replaced', (e) => {
      if (e.kind === 'compression') compressions.inc({ engine: 'local', result: 'done' });
    }),
    local.events.on('recovery:done', (e) => countRecovery('local', e.unknown.length, e.resumed.length)),
    local.events.on('session:taken', (e) => {
      takeovers.inc();
      countRecovery('local', e.unknown.length, e.resumed.length);
    }),
  );
  function countRecovery(engine: string, unknown: number, resumed: number): void {
    recoveries.inc({ engine, result: 'unknown' }, unknown);
    recoveries.inc({ engine, result: 'resumed' }, resumed);
  }

  // Every model call of either engine.
  off.push(
    runtime.providers.events.on('model:call', (call) => {
      const labels = { provider: call.provider, model: call.model };
      modelSeconds.observe({ ...labels, result: call.ok ? 'ok' : 'error' }, call.seconds);
      if (!call.usage) return;
      tokens.inc({ ...labels, kind: 'input' }, call.usage.input_tokens);
      tokens.inc({ ...labels, kind: 'output' }, call.usage.output_tokens);
      tokens.inc({ ...labels, kind: 'cache_read' }, call.usage.cache_read_tokens);
      tokens.inc({ ...labels, kind: 'cache_write' }, call.usage.cache_write_tokens);
      if (call.usage.cost_status === 'unknown') unpriced.inc(labels);
      else cost.inc(labels, call.usage.cost_usd ?? 0);
    }),
  );

  stores.observeCommits((seconds) => commitSeconds.observe({ backend: stores.kind }, seconds));

  // The messaging engine, while it runs.
  let messagingOff: (() => void)[] = [];
  const startedAt = new Map<string, number>();
  const watchMessaging = (events: TypedEmitter<MessagingEvents> | null): void => {
    for (const stop of messagingOff.splice(0)) stop();
    startedAt.clear();
    if (!events) return;
    messagingOff = [
      events.on('inbound:accepted', (e) => {
        if (!e.internal) admissions.inc({ engine: 'platform' });
      }),
      events.on('turn:start', (e) => startedAt.set(e.turn_id, performance.now())),
      events.on('turn:complete', (e) => {
        turns.inc({ engine: 'platform', outcome: e.outcome });
        const started = startedAt.get(e.turn_id);
        startedAt.delete(e.turn_id);
        if (started !== undefined)
          turnSeconds.observe({ engine: 'platform' }, (performance.now() - started) / 1000);
      }),
      events.on('session:compressed', () => compressions.inc({ engine: 'platform', result: 'done' })),
      events.on('compression:failed', () => compressions.inc({ engine: 'platform', result: 'failed' })),
      events.on('recovery:done', (e) => {
        recoveries.inc({ engine: 'platform', result: 'resumed' }, e.resumed.length);
        recoveries.inc({ engine: 'platform', result: 'stale' }, e.stale.length);
        recoveries.inc({ engine: 'platform', result: 'suspended' }, e.suspended.length);
      }),
    ];
  };

  return {
    key,
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
    watchMessaging,
    close() {
      watchMessaging(null);
      for (const stop of off.splice(0)) stop();
      stores.observeCommits(() => undefined);
      registry.clear();
    },
  };
}
