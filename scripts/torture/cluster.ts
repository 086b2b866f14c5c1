/**
 * The torture harness's cluster mode (issue 14): several real daemons on one PostgreSQL schema with
 * `cluster.enabled`, a demo model the harness owns (every model request of every instance, with its
 * admission and when it started and ended), clients that talk to a random live instance and retry
 * every unacknowledged call on another one, and SIGKILLs of any instance — at random moments and at
 * the fault points — each followed by a restart. After the last iteration every instance is started,
 * everything is drained, and the checks run: the six invariants of the single-daemon run
 * (checks.ts), plus the cluster's own:
 *
 * - never two turns of one session at once: no two model requests of one session overlap in time
 *   (a killed instance's request ends when its connection closes);
 * - every takeover fenced: a session's lease token never goes back, and a change of owner always
 *   comes with a new token (sampled after every iteration);
 * - authority epochs strictly increase over every start of every instance.
 */
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { FAULT_ENV, FAULT_POINTS, JOB_FAULT_POINTS, type FaultPoint } from '../../src/daemon/faults.js';
import { RENEWALS_STALLED } from '../../src/domain/cluster/member.js';
import { startDemoModel, type RecordedRequest } from '../../src/runtime/demo/server.js';
import { ConnectionClosedError } from '../../src/surfaces/client/rpc-client.js';
import { ADMISSION_HEADER } from '../../src/runtime/runner.js';
import { approveMarked, refreshUnknowns } from './approver.js';
import { checkInvariants, type AdmissionFact, type Tally } from './checks.js';
import { Ledger, workloadClients } from './client.js';
import { DaemonProcess, DaemonSet, EarlyExit, openLog } from './daemon.js';
import { postgresEvidence } from './evidence.js';
import {
  drain,
  iterationRuns,
  resolveUnknowns,
  runningAdmissions,
  session,
  workloadText,
  writeTortureHome,
  type Extension,
  type Unknown,
} from './harness.js';
import { JobWorkload, type JobTally } from './jobs.js';
import { Rng } from './rng.js';

export interface ClusterTortureOptions {
  iterations: number;
  seed: number;
  /**
   * Stop starting iterations after this many minutes (then the final drain and checks run as
   * always); the summary's `iterations` is how many ran. For long runs on a shared machine.
   */
  minutes?: number;
  /** Daemons sharing the database (default 3). */
  instances?: number;
  clients?: number;
  /** `cluster.lease_s` of every instance (default 2). */
  leaseS?: number;
  /** The server (default GATEHOUSE_TEST_PG_URL or 127.0.0.1:5432/test); a schema of its own is made. */
  pgUrl?: string;
  /** Keep the temp homes and the schema (for a failing seed). */
  keep?: boolean;
  /** The fault points armed instances cycle through (default: all of them). */
  faults?: readonly FaultPoint[];
  log?: (line: string) => void;
  signal?: AbortSignal;
  /** More iterations while the run has not yet shown what its caller needs (harness.ts `Extension`). */
  extend?: Extension<ClusterTortureProgress>;
  /**
   * Per-minute scheduled jobs (jobs.ts; default 0): the instances run on a test clock moved one
   * minute per iteration, and `job.decided` joins the fault points armed instances cycle through.
   */
  jobs?: number;
}

/** What a cluster torture run has done so far, as its `extend.enough` sees it. */
export interface ClusterTortureProgress {
  kills: Readonly<Record<string, number>>;
  /** Session leases seen with a new holder, sampled after each iteration. */
  ownerChanges: number;
}

export interface ClusterTortureSummary extends Tally {
  seed: number;
  iterations: number;
  instances: number;
  /** Every instance's `cluster.lease_s`. */
  lease_s: number;
  kills: Record<string, number>;
  /**
   * Instances that stopped themselves as they started (exit code 1, a cluster failure such as a
   * renewal later than lease_s / 2 on an overloaded machine): restarted at the next iteration.
   */
  self_stops: number;
  retries: number;
  /** Owner changes seen in the lease samples (takeovers and hand-overs). */
  owner_changes: number;
  model_requests: number;
  /** The scheduled jobs' firings: every due instant fired exactly once (jobs.ts). */
  jobs: JobTally;
  violations: string[];
  root: string;
  elapsed_ms: number;
}

const URL_ENV = 'GATEHOUSE_TORTURE_PG_URL';

/** The torture's own schema on the server, dropped at the end unless kept. */
async function makeSchema(base: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `gh_torture_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE SCHEMA ${name}`);
  const url = new URL(base);
  url.searchParams.set('options', `-csearch_path=${name}`);
  return { url: url.toString(), drop: () => admin(`DROP SCHEMA IF EXISTS ${name} CASCADE`) };
}

interface LeaseSample {
  /** `instance:epoch`, or null for a released lease. */
  owner: string | null;
  token: number;
}

/** Samples the session leases; a token that went back, or a new owner under an old token, is a violation. */
async function sampleLeases(
  url: string,
  seen: Map<string, LeaseSample>,
  violations: string[],
): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let changes = 0;
  try {
    const { rows } = await client.query<{ name: string; owner: string | null; token: string }>(
      `SELECT name, owner_instance || ':' || owner_epoch AS owner, token FROM cluster_leases WHERE kind = 'session'`,
    );
    for (const row of rows) {
      const now = { owner: row.owner, token: Number(row.token) };
      const before = seen.get(row.name);
      if (before) {
        if (now.token < before.token)
          violations.push(`lease of ${row.name}: token went back from ${before.token} to ${now.token}`);
        // A release leaves the row ownerless under its token; a new holder must come with a new one.
        else if (now.owner !== null && now.owner !== before.owner) {
          changes++;
          if (now.token === before.token)
            violations.push(
              `lease of ${row.name}: owner changed to ${now.owner} under the same token ${now.token}`,
            );
        }
      }
      seen.set(row.name, now);
    }
  } finally {
    await client.end();
  }
  return changes;
}

/** Two model requests of one session that overlap in time: two turns of it ran at once. */
export function overlappingRequests(
  requests: readonly RecordedRequest[],
  sessionOf: (admissionId: string) => string | undefined,
): string[] {
  const bySession = new Map<string, RecordedRequest[]>();
  for (const r of requests) {
    const admission = r.headers[ADMISSION_HEADER];
    if (typeof admission !== 'string') continue;
    const id = sessionOf(admission);
    if (id === undefined) continue;
    const list = bySession.get(id) ?? [];
    list.push(r);
    bySession.set(id, list);
  }
  const found: string[] = [];
  for (const [id, list] of bySession) {
    list.sort((a, b) => a.received_at - b.received_at);
    for (let i = 1; i < list.length; i++) {
      const previous = list[i - 1]!;
      const ended = previous.finished_at ?? Number.POSITIVE_INFINITY;
      if (list[i]!.received_at < ended)
        found.push(
          `session ${id}: a model request of ${String(list[i]!.headers[ADMISSION_HEADER])} began while one of ${String(previous.headers[ADMISSION_HEADER])} was still open`,
        );
    }
  }
  return found;
}

/** How many instances in a row may go away under one step of the run before it fails. */
const ON_LIVE_ATTEMPTS = 10;
/** How long an instance that closed a connection as going away may take to exit (its drain). */
const LEAVING_MS = 30_000;

export async function runClusterTorture(options: ClusterTortureOptions): Promise<ClusterTortureSummary> {
  const began = Date.now();
  const daemons = new DaemonSet();
  const abandon = (): void => daemons.killAll();
  options.signal?.addEventListener('abort', abandon, { once: true });
  const log = options.log ?? (() => undefined);
  const rng = new Rng(options.seed);
  const n = options.instances ?? 3;
  const leaseS = options.leaseS ?? 2;
  const root = mkdtempSync(join(tmpdir(), 'gh-cluster-torture-'));
  const work = join(root, 'work');
  mkdirSync(work);
  const schema = await makeSchema(
    options.pgUrl ?? process.env.GATEHOUSE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  );
  const demo = await startDemoModel({ host: '127.0.0.1', port: 0, record: true });
  const jobs = new JobWorkload(root, options.jobs ?? 0);
  const homes = Array.from({ length: n }, (_, i) => {
    const home = join(root, `home-${String.fromCharCode(97 + i)}`);
    writeTortureHome(home, demo.baseUrl, [
      `store: {kind: postgres, url_env: ${URL_ENV}}`,
      `cluster: {enabled: true, lease_s: ${leaseS}, instance_name: ${String.fromCharCode(97 + i)}}`,
    ]);
    return home;
  });
  const daemonLog = openLog(join(root, 'daemons.log'));
  const store = await postgresEvidence(schema.url);
  const ledger = new Ledger();
  const { clients, ranLines } = workloadClients(work, ledger, options.clients ?? 3, log);
  const kills: Record<string, number> = {};
  let selfStops = 0;
  const resolved = new Set<string>();
  const toResolve = new Map<string, Unknown>();
  const unknownReasons = new Map<string, string>();
  const approvals = new Map<string, number>();
  const leases = new Map<string, LeaseSample>();
  let ownerChanges = 0;
  let epoch = 0;
  const running: (DaemonProcess | null)[] = new Array<DaemonProcess | null>(n).fill(null);
  /** Every instance process this run started, for what their logs say afterwards. */
  const everStarted: DaemonProcess[] = [];

  /** Starts instance `i` (armed at `fault`, if given); a daemon killed by its fault during recovery counts. */
  const start = async (i: number, fault: string | null): Promise<void> => {
    const env = {
      [URL_ENV]: schema.url,
      ...jobs.env(),
      ...(fault ? { [FAULT_ENV]: `${fault}@${rng.int(1, 2)}` } : {}),
    };
    try {
      const daemon = await DaemonProcess.start(homes[i]!, env, daemonLog, daemons);
      if (daemon.epoch <= epoch)
        ledger.violations.push(`epoch ${daemon.epoch} after ${epoch}: not increasing across the cluster`);
      epoch = Math.max(epoch, daemon.epoch);
      running[i] = daemon;
      everStarted.push(daemon);
    } catch (error) {
      if (!(error instanceof EarlyExit)) throw error;
      running[i] = null;
      if (fault && error.exit.signal === 'SIGKILL') {
        kills[`${fault} (before ready)`] = (kills[`${fault} (before ready)`] ?? 0) + 1;
      } else {
        const reason = lastFailure(homes[i]!);
        if (!(error.exit.code === 1 && reason?.startsWith('cluster: '))) throw error;
        selfStops++;
        log(`instance ${i} stopped itself as it started: ${reason}`);
      }
    }
  };
  const alive = (): DaemonProcess[] => running.filter((d): d is DaemonProcess => d !== null && d.alive);
  /**
   * Alive and not on its way out: a member that stopped itself (its renewals stalled on a loaded
   * machine) closes its connections at once and drains for up to drain_timeout_s before it exits.
   */
  const serving = (): DaemonProcess[] => alive().filter((d) => d.failureReason() === null);
  /**
   * Runs `work` on the first live instance. An instance that exits under it (a member that stops
   * itself on an overloaded machine removes its control socket first, so a connection finds
   * nothing) is started again and `work` runs on the next: only that instance's own stop excuses
   * it (its log's reason, or its exit within five seconds of the failure; after it closed the
   * connection as going away, 1001, within its drain). `work` must be safe to repeat (the drain and
   * the settling re-send only calls the ledger still holds pending, under their request ids).
   * Beside a second gate run (load 20-27) instances stopped themselves several times in a row.
   */
  const onLiveInstance = async <T>(what: string, work: (d: DaemonProcess) => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      let d = serving()[0];
      if (d === undefined) {
        // Every instance is down or on its way out: those leaving finish their drain (bounded by
        // drain_timeout_s), then all start again.
        await Promise.all(alive().map((x) => x.exited));
        for (let k = 0; k < n; k++) if (!running[k]?.alive) await start(k, null);
        d = serving()[0];
      }
      if (d === undefined) throw new Error(`no instance stayed up for the ${what}`);
      try {
        return await work(d);
      } catch (error) {
        const goingAway = error instanceof ConnectionClosedError && error.code === 1001;
        const leaving =
          d.failureReason() !== null ||
          (await Promise.race([
            d.exited.then(() => true),
            sleep(goingAway ? LEAVING_MS : 5000).then(() => false),
          ]));
        if (!leaving) throw error;
        if (attempt >= ON_LIVE_ATTEMPTS)
          throw new Error(
            `the ${what}: ${attempt} instances in a row went away under it; the last: ${String(error)}`,
            { cause: error },
          );
        log(
          `instance ${running.indexOf(d)} went away during the ${what} (${String(error)}): again on another`,
        );
        for (let k = 0; k < n; k++) if (!running[k]?.alive) await start(k, null);
      }
    }
  };
  const anyAlive = (): DaemonProcess => rng.pick(alive());

  try {
    for (let i = 0; i < n; i++) await start(i, null);
    if (jobs.count > 0) {
      const g = await alive()[0]!.connect();
      try {
        await jobs.setUp(g, work);
      } finally {
        await g.close();
      }
    }
    const until = options.minutes === undefined ? Infinity : began + options.minutes * 60_000;
    let iterationsRun = 0;
    const progress = (): ClusterTortureProgress => ({ kills, ownerChanges });
    for (
      let i = 0;
      iterationRuns(i, options.iterations, options.extend, progress) && Date.now() < until;
      i++, iterationsRun++
    ) {
      options.signal?.throwIfAborted();
      // Every instance that is down comes back; on even iterations the first of them is armed.
      const points: readonly string[] =
        options.faults ?? (jobs.count > 0 ? [...FAULT_POINTS, ...JOB_FAULT_POINTS] : FAULT_POINTS);
      let fault: string | null = i % 2 === 0 ? points[(options.seed + i / 2) % points.length]! : null;
      let armed: DaemonProcess | null = null;
      for (let k = 0; k < n; k++) {
        if (running[k]?.alive) continue;
        await start(k, fault);
        if (fault && running[k]) armed = running[k] ?? null;
        fault = null;
      }
      if (alive().length === 0) await start(0, null);
      // The jobs' next minute falls due as this iteration's kills come.
      jobs.advance();
      for (const c of clients) c.plan(rng, rng.next() < 0.3, rng.int(2, 4), (id, r) => workloadText(id, r));
      await refreshUnknowns(store, toResolve, unknownReasons);
      const resolveNow = [...toResolve.values()].filter(() => rng.next() < 0.5);
      const stopApprover = new AbortController();
      // Each client on an instance of its own choosing; the human watches from every instance.
      const work = Promise.all([
        ...clients.map((c) => session(anyAlive(), (g) => c.run(g))),
        ...alive().map((d) => session(d, (g) => approveMarked(g, ledger, approvals, stopApprover.signal))),
        session(anyAlive(), (g) => resolveUnknowns(g, ledger, resolveNow, resolved, toResolve)),
      ]);
      // One victim, now and then two; an armed instance may die at its fault point first.
      const victims = new Set([rng.pick(alive())]);
      if (n > 2 && rng.next() < 0.2) victims.add(rng.pick(alive()));
      const exit = await Promise.race([
        ...(armed ? [armed.exited] : []),
        sleep(armed ? 4000 : rng.int(30, 1500)).then(() => null),
      ]);
      const by = exit?.signal === 'SIGKILL' ? 'fault point' : 'random';
      for (const v of victims) {
        await v.kill();
        kills[by] = (kills[by] ?? 0) + 1;
      }
      if (armed && !armed.alive && !victims.has(armed))
        kills['fault point'] = (kills['fault point'] ?? 0) + 1;
      stopApprover.abort();
      await work;
      for (const u of await runningAdmissions(store, ledger))
        if (!resolved.has(u.admission_id)) toResolve.set(u.admission_id, u);
      ownerChanges += await sampleLeases(schema.url, leases, ledger.violations);
      log(
        `iteration ${i + 1}/${options.iterations}: ${by} kill of ${victims.size}, ${alive().length} alive, ${ledger.admissions.size} acknowledged, pending ${clients.map((c) => `${c.name} ${c.pending.length}${c.stoppedAt ? ` (${c.stoppedAt})` : ''}`).join(', ')}`,
      );
    }

    // The final drain: every instance up, no faults; the expired leases are taken over.
    // One that stops itself as it starts (an overloaded machine) is started again.
    for (let k = 0; k < n; k++)
      for (let attempt = 0; attempt < 5 && !running[k]?.alive; attempt++) await start(k, null);
    if (alive().length === 0) throw new Error('no instance stayed up for the final drain');
    await sleep(leaseS * 1000 * 1.5);
    await refreshUnknowns(store, toResolve, unknownReasons);
    const stopApprover = new AbortController();
    const approving = alive().map((d) =>
      session(d, (g) => approveMarked(g, ledger, approvals, stopApprover.signal)),
    );
    // An instance that stops itself during the drain (its renewals stalled) leaves its turns to a
    // takeover, whose recovery may make one unknown (a running tool, max_resumes) as a start does:
    // the reason is read from the store, and the checks judge it as any other.
    const unknownSinceStart = async (admissionId: string): Promise<boolean> => {
      if (!everStarted.some((d) => d.failureReason()?.includes(RENEWALS_STALLED) === true)) return false;
      const row = await store.status(admissionId);
      if (row?.state !== 'unknown') return false;
      unknownReasons.set(admissionId, row.detail ?? '');
      return true;
    };
    const transcripts = await onLiveInstance('final drain', async (d) => {
      for (const u of await runningAdmissions(store, ledger))
        if (!resolved.has(u.admission_id)) toResolve.set(u.admission_id, u);
      await refreshUnknowns(store, toResolve, unknownReasons);
      return drain(
        d,
        clients,
        ledger,
        [...toResolve.values()],
        resolved,
        log,
        { rounds: 60, pauseMs: 1000 },
        unknownSinceStart,
      );
    });
    stopApprover.abort();
    await Promise.all(approving);
    await onLiveInstance("jobs' settling", async (d) => {
      const settler = await d.connect();
      try {
        await jobs.settle(settler, () => store.jobRuns(), resolved, log);
      } finally {
        await settler.close();
      }
    });
    for (const [id, messages] of jobs.transcripts) transcripts.set(id, messages);
    ownerChanges += await sampleLeases(schema.url, leases, ledger.violations);
    for (const d of alive()) {
      const stop = await d.stop();
      if (stop.code === 0) continue;
      // SCL-1's answer to renewals stalled for lease_s/2 (an overloaded machine) is to stop: its
      // sessions go to the others at the lease's end, and the checks below still hold. Any other
      // unclean stop breaks REC-6.
      const reason = d.failureReason();
      if (reason?.includes(RENEWALS_STALLED) === true)
        log(`instance ${running.indexOf(d)} stopped itself before its graceful stop ended: ${reason}`);
      else
        ledger.violations.push(
          `graceful stop exited ${stop.code ?? stop.signal}${reason === null ? '' : ` (${reason})`}`,
        );
    }
    const admissions: AdmissionFact[] = await store.admissions();
    const ran = ranLines();
    const { tally, violations } = checkInvariants({
      ledger,
      admissions,
      sessionsPerRequest: await store.sessionsPerRequest(),
      requests: demo.requests,
      ran,
      transcripts,
      resolved,
      queuedWhenTampered: new Set(),
      unknownReasons,
      approvals,
      maxResumes: 3,
    });
    const sessionOf = new Map(admissions.map((a) => [a.admission_id, a.logical_id]));
    violations.push(...overlappingRequests(demo.requests, (id) => sessionOf.get(id)));
    const fired = jobs.check(await store.jobRuns(), admissions, demo.requests, resolved);
    violations.push(...fired.violations);
    if (violations.length > 0) appendFileSync(join(root, 'violations.txt'), violations.join('\n'));
    return {
      seed: options.seed,
      iterations: iterationsRun,
      instances: n,
      lease_s: leaseS,
      ...tally,
      kills,
      self_stops: selfStops,
      retries: ledger.retries,
      owner_changes: ownerChanges,
      model_requests: demo.requests.length,
      jobs: fired.tally,
      violations,
      root,
      elapsed_ms: Date.now() - began,
    };
  } finally {
    options.signal?.removeEventListener('abort', abandon);
    daemons.killAll();
    daemonLog.end();
    await store.close().catch(() => undefined);
    await demo.close();
    if (!options.keep) {
      rmSync(root, { recursive: true, force: true });
      await schema.drop().catch(() => undefined);
    }
  }
}

/** The reason of the last 'gateway stopping after a failure' line of a torture daemon's log. */
function lastFailure(home: string): string | null {
  const path = join(home, 'logs', 'gateway.log');
  if (!existsSync(path)) return null;
  const line = readFileSync(path, 'utf8')
    .split('\n')
    .findLast((l) => l.includes('gateway stopping after a failure'));
  if (!line) return null;
  try {
    return (JSON.parse(line) as { reason?: string }).reason ?? null;
  } catch {
    return null;
  }
}
