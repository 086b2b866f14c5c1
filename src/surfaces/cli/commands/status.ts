import { oneLine } from '../../../daemon/errors.js';
import { gatewayState } from '../../../daemon/gateway-state.js';
import type { AgentCacheStats } from '../../../domain/agents/agent-cache.js';
import type { ClusterView } from '../../../domain/cluster/member.js';
import type { AdapterStatus } from '../../../domain/messaging/adapter.js';
import type { JobStatus } from '../../../daemon/daemon.js';
import type { HomeLayout } from '../../../daemon/home.js';
import { colours } from '../colour.js';
import { cliHome, say } from '../shared.js';
import { dashboardUrl } from './dashboard.js';

export interface StatusReport {
  running: boolean;
  state: 'running' | 'starting' | 'stopped';
  pid: number | null;
  url: string | null;
  /** The web dashboard's address (the listener's `/`); null when stopped. */
  dashboard: string | null;
  epoch: number | null;
  instance_id: string | null;
  started_at: string | null;
  uptime_s: number | null;
  model: string;
  /**
   * Where sessions are stored. Running: what the daemon opened (from gateway.json), whatever the
   * config says now. Stopped: what the config selects (`store.kind`, the variable of a PostgreSQL URL).
   */
  store: string;
  home: string;
  config_file: string;
  log_file: string;
  stale_pid: number | null;
  /** The running daemon's chat platform adapters (from gateway.json); empty when stopped or none. */
  adapters: AdapterStatus[];
  /** The running daemon's agent cache counters as of its last housekeeping pass; null when stopped. */
  agent_cache: AgentCacheStats | null;
  /** With cluster.enabled: the instances on the database as of the daemon's last scan; else null. */
  cluster: ClusterView | null;
  /** The running daemon's scheduled jobs: next and last run, outcome (docs/scheduling.md); empty when stopped. */
  jobs: JobStatus[];
}

/**
 * The configured model or store, or why the config cannot be read. The config (its parser and
 * schema) is loaded only here: a running daemon's status comes from gateway.json alone.
 */
async function configured(layout: HomeLayout, what: 'describeModel' | 'describeStore'): Promise<string> {
  try {
    const config = await import('../../../daemon/config.js');
    const { loadCliConfig } = await import('../load-config.js');
    return config[what](loadCliConfig(layout, { quiet: true }).config);
  } catch (error) {
    return `unknown: ${oneLine(error)}`;
  }
}

async function statusReport(layout: HomeLayout): Promise<StatusReport> {
  const state = gatewayState(layout);
  const files = {
    home: layout.root,
    config_file: layout.configFile,
    log_file: layout.logFile,
  };
  const stale_pid = state.status === 'stopped' ? (state.stalePid ?? null) : null;
  if (state.status === 'running') {
    const { info } = state;
    return {
      running: true,
      state: 'running',
      pid: state.pid,
      url: info.url,
      dashboard: info.url ? dashboardUrl(info.url) : null,
      epoch: info.epoch,
      instance_id: info.instance_id,
      started_at: info.started_at,
      uptime_s: Math.max(0, Math.round((Date.now() - Date.parse(info.started_at)) / 1000)),
      model: info.model, // what the running daemon uses, even if the file changed since
      // What the running daemon opened, even if the file changed since.
      store:
        info.store ?? `${await configured(layout, 'describeStore')} (as configured; the daemon did not say)`,
      ...files,
      stale_pid,
      adapters: Array.isArray(info.adapters) ? info.adapters : [],
      agent_cache: info.agent_cache ?? null,
      cluster: info.cluster ?? null,
      jobs: Array.isArray(info.jobs) ? info.jobs : [],
    };
  }
  const model = await configured(layout, 'describeModel');
  return {
    running: false,
    state: state.status,
    pid: state.status === 'starting' ? state.pid : null,
    url: null,
    dashboard: null,
    epoch: null,
    instance_id: null,
    started_at: null,
    uptime_s: null,
    model,
    store: await configured(layout, 'describeStore'),
    ...files,
    stale_pid,
    adapters: [],
    agent_cache: null,
    cluster: null,
    jobs: [],
  };
}

/**
 * One adapter as a status line, from the generic AdapterStatus only: `telegram: polling as @bot`,
 * `irc: running`, `telegram: error: …`, `telegram: stopped (standing by: …)`.
 */
export function describeAdapter(adapter: AdapterStatus): string {
  switch (adapter.state) {
    case 'running':
      return `${adapter.platform}: ${adapter.mode ?? 'running'}${adapter.account ? ` as ${adapter.account}` : ''}`;
    case 'failed':
      // A start that failed is tried again: the platform's API could not be reached.
      return adapter.retry_at
        ? `${adapter.platform}: unreachable: ${adapter.detail ?? 'unknown'} (trying again at ${adapter.retry_at})`
        : `${adapter.platform}: error: ${adapter.detail ?? 'unknown'}`;
    case 'starting':
      // Its API has not answered yet; the detail is why the last attempt failed.
      return `${adapter.platform}: connecting${adapter.detail ? ` (unreachable: ${adapter.detail})` : ''}`;
    default:
      // A stopped adapter may say why (in a cluster: it stands by while another instance receives).
      return `${adapter.platform}: ${adapter.state}${adapter.detail ? ` (${adapter.detail})` : ''}`;
  }
}

/** `12 agents (3.1 MiB), 340 hits, 12 misses; evicted: ttl 0, pressure 0, lru 0, invalidated 1` */
export function describeAgentCache(stats: AgentCacheStats): string {
  const evicted = Object.entries(stats.evictions)
    .map(([cause, n]) => `${cause} ${n}`)
    .join(', ');
  const mib = (stats.bytes / 2 ** 20).toFixed(1);
  return `${stats.size} agents (${mib} MiB), ${stats.hits} hits, ${stats.misses} misses; evicted: ${evicted}`;
}

/**
 * The cluster as lines: `cluster: 3 instances, lease 10 s (as of 4 s ago)`, then one line each:
 * `  api-1 (this) epoch 12 http://… heartbeat 2.1 s ago, 4 session leases`, and one per chat bot:
 * `  bot telegram:123456: held by api-2 epoch 13`.
 */
export function describeCluster(view: ClusterView, now = Date.now()): string[] {
  const age = Math.max(0, Math.round((now - Date.parse(view.as_of)) / 1000));
  const lines = [
    `cluster: ${view.instances.length} instance${view.instances.length === 1 ? '' : 's'}, lease ${view.lease_s} s (as of ${age} s ago)`,
  ];
  for (const i of view.instances) {
    const name = i.name ?? i.instance_id.slice(0, 8);
    const self = i.epoch === view.epoch ? ' (this)' : '';
    const beat = (i.heartbeat_age_ms / 1000).toFixed(1);
    const leases = Object.entries(i.leases)
      .map(([kind, n]) => `${n} ${kind} lease${n === 1 ? '' : 's'}`)
      .join(', ');
    const state = i.draining
      ? ', draining'
      : i.heartbeat_age_ms > view.lease_s * 1000
        ? ', not renewing'
        : '';
    lines.push(
      `  ${name}${self} epoch ${i.epoch}${i.url ? ` ${i.url}` : ''}: heartbeat ${beat} s ago, ${leases || 'no leases'}${state}`,
    );
  }
  // Which instance receives for each chat bot (its `bot` lease); older daemons advertise no `bots`.
  for (const bot of view.bots ?? []) {
    const owner =
      bot.owner_epoch === null
        ? 'free (an instance takes it at its next scan)'
        : `held by ${bot.owner_name ?? 'an instance'}${bot.owner_epoch === view.epoch ? ' (this)' : ''} epoch ${bot.owner_epoch}`;
    lines.push(`  bot ${bot.name}: ${owner}`);
  }
  return lines;
}

/** `job_1a2b… daily digest: cron 0 8 * * * (UTC), active, next 2026-…, last 2026-… completed` */
export function describeJobStatus(job: JobStatus): string {
  const last = job.last_run
    ? `last ${job.last_run.instant} ${job.last_run.outcome ?? job.last_run.state}`
    : 'never run';
  const state = job.state === 'paused' ? `paused (${job.paused_reason ?? ''})` : job.state;
  return `${job.job_id}${job.name ? ` ${job.name}` : ''}: ${job.schedule}, ${state}, next ${job.next_run ?? '-'}, ${last}`;
}

function printStatus(report: StatusReport): void {
  const rows: [string, string | number | null][] = [
    ['pid', report.pid],
    ['url', report.url],
    ['dashboard', report.dashboard],
    ['epoch', report.epoch],
    ['uptime', report.uptime_s === null ? null : `${report.uptime_s}s`],
    ['model', report.model],
    ['store', report.store],
    ['home', report.home],
  ];
  const c = colours();
  if (report.state === 'running') say(c.green('Gatehouse is running.'));
  else if (report.state === 'starting') say(c.yellow('Gatehouse is starting (not ready yet).'));
  else
    say(
      `${c.yellow('Gatehouse is not running.')} Start it with "gatehouse start" (or "gatehouse serve" in the foreground).`,
    );
  if (report.stale_pid !== null)
    say(c.dim(`  (a stale pid file from a stopped or crashed run names pid ${report.stale_pid})`));
  const width = Math.max(...rows.map(([label]) => label.length)) + 1;
  for (const [label, value] of rows)
    if (value !== null) say(`  ${c.dim(`${label}:`.padEnd(width))} ${value}`);
  if (report.agent_cache !== null) say(`  agent cache: ${describeAgentCache(report.agent_cache)}`);
  if (report.cluster !== null) for (const line of describeCluster(report.cluster)) say(`  ${line}`);
  if (report.jobs.length > 0) {
    say('  scheduled jobs:');
    for (const line of report.jobs.map(describeJobStatus)) say(`    ${line}`);
  }
  if (report.adapters.length > 0) {
    say('  chat platforms:');
    for (const adapter of report.adapters) say(`    ${describeAdapter(adapter)}`);
  }
}

/** `gatehouse status`: read from the run files (and the config when stopped); the daemon is not asked. */
export async function status(options: { json?: boolean }): Promise<void> {
  const report = await statusReport(cliHome());
  if (options.json) say(JSON.stringify(report, null, 2));
  else printStatus(report);
}
