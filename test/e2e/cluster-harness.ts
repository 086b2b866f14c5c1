/**
 * Several real daemons on one PostgreSQL schema (SCL-1): `startCluster` starts them as child
 * processes, each in a home of its own, all with `cluster.enabled` on the same schema, and gives the
 * tests the schema to look at. Reusable by the cluster torture mode and the benchmarks.
 */
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startDemoModel, type DemoModelServer, type RecordedRequest } from '../../src/runtime/demo/server.js';
import { startDaemon, type RunningDaemon } from './gateway-harness.js';
import { requireBuild, tempHome } from './cli.js';
import { createTestSchema, inSchema, type TestSchema } from '../shared/postgres.js';

export const CLUSTER_URL_ENV = 'GH_CLUSTER_STORE_URL';

export interface ClusterOptions {
  /** How many instances (default 3), named a, b, c, … (`cluster.instance_name`). */
  size?: number;
  /**
   * `cluster.lease_s` (default 10: failover tests wait out one lease, and an instance stops itself
   * when its renewals stall for half of one; two gate runs side by side on two cores, load 20-27,
   * stalled renewals for more than 3 s, so a shorter lease stopped instances mid-test).
   */
  leaseS?: number;
  /** More config for every instance (the model, limits …), or per instance by its name. */
  config?: string | ((name: string) => string);
  /** More environment for every instance (a chat platform's token). */
  env?: NodeJS.ProcessEnv;
}

export interface ClusterNode {
  name: string;
  home: string;
  /** The running daemon, or null after it was killed or stopped (until restarted). */
  d: RunningDaemon | null;
}

export class TestCluster {
  readonly nodes: ClusterNode[] = [];

  constructor(
    readonly schema: TestSchema,
    readonly options: Required<ClusterOptions>,
  ) {}

  /** The config of instance `name`. */
  configOf(name: string): string {
    const { config } = this.options;
    return [
      typeof config === 'function' ? config(name) : config,
      `store: {kind: postgres, url_env: ${CLUSTER_URL_ENV}}`,
      `cluster: {enabled: true, lease_s: ${this.options.leaseS}, instance_name: ${name}}`,
    ]
      .filter(Boolean)
      .join('\n');
  }

  /** Starts (or restarts, in its home) node `i`. */
  async start(i: number): Promise<RunningDaemon> {
    const node = this.nodes[i]!;
    node.d = await startDaemon({
      home: node.home,
      config: this.configOf(node.name),
      env: { ...this.options.env, [CLUSTER_URL_ENV]: this.schema.url },
    });
    return node.d;
  }

  daemon(i: number): RunningDaemon {
    const d = this.nodes[i]!.d;
    if (!d) throw new Error(`node ${this.nodes[i]!.name} is not running`);
    return d;
  }

  /** The node running in `epoch`, or undefined. */
  byEpoch(epoch: number): number {
    return this.nodes.findIndex((n) => n.d?.epoch === epoch);
  }

  /** The instance id a node's daemon advertised (its connections are named after it). */
  instanceId(i: number): string {
    const d = this.daemon(i);
    return (JSON.parse(readFileSync(d.layout.gatewayJson, 'utf8')) as { instance_id: string }).instance_id;
  }

  async kill(i: number): Promise<void> {
    await this.nodes[i]!.d?.kill();
    this.nodes[i]!.d = null;
  }

  sql<T extends Record<string, unknown>>(text: string, params: unknown[] = []): Promise<T[]> {
    return inSchema(this.schema.name, async (c) => (await c.query<T>(text, params)).rows);
  }

  /** The session lease as it stands: owner epoch (null when released) and token. */
  async lease(logicalId: string): Promise<{ owner_epoch: number | null; token: number } | null> {
    const rows = await this.sql<{ owner_epoch: string | null; token: string }>(
      `SELECT owner_epoch, token FROM cluster_leases WHERE kind = 'session' AND name = $1`,
      [logicalId],
    );
    const row = rows[0];
    return row
      ? { owner_epoch: row.owner_epoch === null ? null : Number(row.owner_epoch), token: Number(row.token) }
      : null;
  }

  /** A chat bot's lease as it stands (kind `bot`, name `<platform>:<bot id>`), or null. */
  async botLease(name: string): Promise<{ owner_epoch: number | null; token: number } | null> {
    const rows = await this.sql<{ owner_epoch: string | null; token: string }>(
      `SELECT CASE WHEN expires_at > now() THEN owner_epoch END AS owner_epoch, token
         FROM cluster_leases WHERE kind = 'bot' AND name = $1`,
      [name],
    );
    const row = rows[0];
    return row
      ? { owner_epoch: row.owner_epoch === null ? null : Number(row.owner_epoch), token: Number(row.token) }
      : null;
  }

  /**
   * Waits until every chat reply on the ledger is marked delivered: a SIGKILL after that cannot
   * catch one between its send and its mark (which the next holder would send again, as recovered).
   */
  async repliesSettled(): Promise<void> {
    await this.until(
      'every reply marked delivered',
      () =>
        this.sql<{ n: number }>('SELECT count(*)::int AS n FROM delivery_ledger WHERE delivered_at IS NULL'),
      (rows) => rows[0]!.n === 0,
    );
  }

  /** Polls the database until `check` holds (there is no event across processes); a clear error past `timeoutMs`. */
  async until<T>(
    what: string,
    read: () => Promise<T> | T,
    check: (value: T) => boolean,
    timeoutMs = 60_000,
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (check(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Kills every node still running and drops the schema. */
  async cleanup(): Promise<void> {
    const running = this.nodes.flatMap((n) => (n.d ? [n.d] : []));
    await Promise.all(running.map((d) => d.kill().catch(() => undefined)));
    for (const n of this.nodes) n.d = null;
    await this.schema.drop();
  }
}

/** Starts `size` instances on one fresh schema, one after the other. */
export async function startCluster(options: ClusterOptions = {}): Promise<TestCluster> {
  const size = options.size ?? 3;
  const cluster = new TestCluster(await createTestSchema({ migrated: true }), {
    size,
    leaseS: options.leaseS ?? 10,
    config: options.config ?? '',
    env: options.env ?? {},
  });
  for (let i = 0; i < size; i++)
    cluster.nodes.push({ name: String.fromCharCode(97 + i), home: tempHome(), d: null });
  try {
    for (let i = 0; i < size; i++) await cluster.start(i);
  } catch (error) {
    await cluster.cleanup();
    throw error;
  }
  return cluster;
}

/** A chat bot's cluster test file (see useBotCluster). */
export interface BotCluster<S> {
  /** The platform's loopback stand-in, started once for the file. */
  readonly standIn: S;
  /** The demo model every instance talks to. */
  readonly model: DemoModelServer;
  /** The cluster of the running test, or null. */
  readonly cluster: TestCluster | null;
  /**
   * Starts `size` instances on a fresh schema, each configured with the demo model and the
   * platform's lines (`platform(name)`: what goes under `platforms:`, by instance name).
   */
  start(options: {
    size: number;
    leaseS: number;
    env: NodeJS.ProcessEnv;
    platform: (name: string) => string[];
  }): Promise<TestCluster>;
}

/**
 * The set-up every chat-platform cluster test shares: the platform's stand-in and a demo model
 * for the file, a cluster per test (cleaned up after it, with the held model and any held sends
 * released first), both closed after the file.
 */
export function useBotCluster<S extends { close(): Promise<void> }>(
  startStandIn: () => Promise<S>,
  releaseHeld: (standIn: S) => void = () => undefined,
): BotCluster<S> {
  let standIn: S | null = null;
  let model: DemoModelServer | null = null;
  let cluster: TestCluster | null = null;
  beforeAll(async () => {
    requireBuild();
    standIn = await startStandIn();
    model = await startDemoModel();
  });
  afterEach(async () => {
    model?.release();
    if (standIn) releaseHeld(standIn);
    await cluster?.cleanup();
    cluster = null;
  });
  afterAll(async () => {
    await standIn?.close();
    await model?.close();
  });
  return {
    get standIn() {
      if (!standIn) throw new Error('the stand-in starts in beforeAll');
      return standIn;
    },
    get model() {
      if (!model) throw new Error('the demo model starts in beforeAll');
      return model;
    },
    get cluster() {
      return cluster;
    },
    async start({ size, leaseS, env, platform }) {
      const url = JSON.stringify(this.model.baseUrl);
      cluster = await startCluster({
        size,
        leaseS,
        env,
        config: (name) =>
          [
            `model: {base_url: ${url}, model: gatehouse-demo}`,
            'platforms:',
            ...platform(name).map((line) => `  ${line}`),
          ].join('\n'),
      });
      return cluster;
    },
  };
}

/** The last user message a recorded model request carried (what the turn was answering). */
export function lastUserText(request: RecordedRequest): unknown {
  return (request.body?.messages ?? []).filter((m) => m.role === 'user').at(-1)?.content;
}
