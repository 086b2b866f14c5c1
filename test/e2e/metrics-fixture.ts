/**
 * Reading the Prometheus text the daemon serves at /metrics, and the names docs/observability.md
 * lists: what the metrics tests assert on.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The series Gatehouse defines (docs/observability.md, "Series"); each must be served. */
export const GATEHOUSE_SERIES = [
  'gatehouse_turns_total',
  'gatehouse_turn_duration_seconds',
  'gatehouse_model_call_duration_seconds',
  'gatehouse_model_tokens_total',
  'gatehouse_model_cost_usd_total',
  'gatehouse_model_calls_unpriced_total',
  'gatehouse_admissions_total',
  'gatehouse_queue_depth',
  'gatehouse_sessions_live',
  'gatehouse_turns_running',
  'gatehouse_viewers',
  'gatehouse_connections',
  'gatehouse_approvals_waiting',
  'gatehouse_approval_oldest_age_seconds',
  'gatehouse_compressions_total',
  'gatehouse_recoveries_total',
  'gatehouse_delivery_undelivered',
  'gatehouse_agent_cache_entries',
  'gatehouse_agent_cache_bytes',
  'gatehouse_agent_cache_evictions_total',
  'gatehouse_store_commit_duration_seconds',
  'gatehouse_cluster_leases_held',
  'gatehouse_cluster_takeovers_total',
] as const;

/** The samples of an exposition text (comments skipped). */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]!] = pair[2]!;
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The names with a `# TYPE` line: declared series, whether or not they have a sample yet. */
export function declaredNames(text: string): string[] {
  return [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);
}

/** The sum of the samples of `name` whose labels include `labels`. */
export function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}
