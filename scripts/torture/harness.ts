/**
 * The kill -9 torture harness (issue 5): the real daemon, a demo model the harness owns (so it sees
 * every model request and the admission it belongs to), several concurrent clients retrying every
 * unacknowledged call, and SIGKILLs both at random moments and at each named fault point. After the
 * last iteration it drains everything and checks the six invariants (checks.ts).
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { FAULT_POINTS, FAULT_ENV, type FaultPoint } from '../../src/daemon/faults.js';
import { startDemoModel } from '../../src/runtime/demo/server.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { checkInvariants, type SnapshotMessage, type Tally } from './checks.js';
import { checkLineages } from './lineage.js';
import { Ledger, workloadClients, type TortureClient } from './client.js';
import { DaemonProcess, DaemonSet, EarlyExit, openLog } from './daemon.js';
import { homeLayout } from '../../src/daemon/home.js';
import { Rng } from './rng.js';
import { sqliteEvidence, type StoreEvidence } from './evidence.js';
import { tamper, TAMPER_KINDS } from './tamper.js';
import { APPROVE_MARK, approveMarked, refreshUnknowns } from './approver.js';

export interface TortureOptions {
  iterations: number;
  seed: number;
  clients?: number;
  /** Keep the temp home (for a failing seed). */
  keep?: boolean;
  /** `recovery.max_resumes` (1: no step resume, every started turn unknown, as before REC-7). */
  maxResumes?: number;
  log?: (line: string) => void;
  /** The fault points the armed iterations cycle through (default: all of them). */
  faults?: readonly FaultPoint[];
  /** How long an armed iteration may take to reach its point before a random kill (default 4 s). */
  faultBudgetMs?: number;
  /** Aborting ends the run: its daemon is killed at once and the run rejects. */
  signal?: AbortSignal;
  /** More iterations while the run has not yet shown what its caller needs (see `Extension`). */
  extend?: Extension<TortureProgress>;
  /** Tamper with the database every eighth iteration (default true; see tamper.ts). */
  tamper?: boolean;
}

/**
 * Iterations past `iterations`, up to `maxIterations` in all, while `enough` is false. A short run
 * on a loaded machine can end before its workload reached what the caller asserts happened (a
 * compression, a takeover); the run then goes on, still bounded, instead of proving nothing.
 */
export interface Extension<P> {
  maxIterations: number;
  enough: (progress: P) => boolean;
}

/** What a torture run has done so far, as its `extend.enough` sees it. */
export interface TortureProgress {
  kills: Readonly<Record<string, number>>;
  /** Compressions and resets the clients saw acknowledged. */
  compressions: number;
  resets: number;
}

/** Whether iteration `i` (from 0) runs: within `iterations`, or extended while not yet enough. */
export function iterationRuns<P>(
  i: number,
  iterations: number,
  extend: Extension<P> | undefined,
  progress: () => P,
): boolean {
  if (i < iterations) return true;
  return extend !== undefined && i < extend.maxIterations && !extend.enough(progress());
}

export interface TortureSummary extends Tally {
  seed: number;
  iterations: number;
  kills: Record<string, number>;
  tampered: number;
  refused: number;
  retries: number;
  /** Resets in the final lineages of untampered sessions. */
  resets: number;
  /** Compressions in the final lineages of untampered sessions, and those acknowledged. */
  compressions: number;
  compressions_acknowledged: number;
  violations: string[];
  home: string;
  elapsed_ms: number;
}

/** How long a fault-armed iteration may take to reach its point before a random kill instead. */
const FAULT_BUDGET_MS = 4000;

/**
 * Every tool execution writes its marker (the submission id, unique per admission, and the time in
 * ms) to ran.log in the session's harness-owned directory: one line per execution.
 */
export function workloadText(id: string, rng: Rng): { text: string; tool: boolean } {
  const roll = rng.next();
  if (roll < 0.45) return { text: `hello from ${id}`, tool: false };
  if (roll < 0.8) return { text: `run: echo ${id} >> ran.log`, tool: true };
  if (roll < 0.93) return { text: `run: echo ${id} >> ran.log; sleep 0.3`, tool: true };
  if (roll < 0.965) return approvalText(id, false);
  return approvalText(id, true);
}

/**
 * A command that needs an approval (sudo). Unapproved ones time out (approvals.timeout_s: 1) and
 * never run; `# approve` ones are approved by the harness's approver (approver.ts).
 */
function approvalText(id: string, approve: boolean): { text: string; tool: boolean } {
  return approve
    ? { text: `run: echo ${id} $(date +%s%3N) >> ran.log && sudo -n true ${APPROVE_MARK}`, tool: false }
    : { text: `run: echo ${id} >> ran.log && sudo true`, tool: false };
}

/** A torture daemon's home: its config (the harness's demo model, short timeouts, any free port) plus `extra` lines. */
export function writeTortureHome(home: string, modelUrl: string, extra: readonly string[]): void {
  mkdirSync(home, { mode: 0o700 });
  writeFileSync(
    join(home, 'config.yaml'),
    [
      `model: {base_url: ${JSON.stringify(modelUrl)}, model: gatehouse-demo}`,
      // The workload's own appends to ran.log (inside the session's cwd) run unasked and its
      // `sudo` commands ask: the detector's mode, where the default allow-list would ask for both.
      'approvals: {mode: detect, timeout_s: 1}',
      // A compression keeps only the last user message on: short torture sessions can compress.
      'compression: {tail_tokens: 0}',
      'drain_timeout_s: 5',
      // Any free port: a torture run beside other daemons never takes (or waits for) the default.
      'listener: {port: 0}',
      ...extra,
    ].join('\n'),
    { mode: 0o600 },
  );
}

export async function runTorture(options: TortureOptions): Promise<TortureSummary> {
  const began = Date.now();
  // A run given up on (its test timed out) must not leave its daemon running beside later tests.
  const daemons = new DaemonSet();
  const abandon = (): void => daemons.killAll();
  options.signal?.addEventListener('abort', abandon, { once: true });
  const log = options.log ?? (() => undefined);
  const rng = new Rng(options.seed);
  const root = mkdtempSync(join(tmpdir(), 'gh-torture-'));
  const home = join(root, 'home');
  const work = join(root, 'work');
  mkdirSync(work);
  const demo = await startDemoModel({ host: '127.0.0.1', port: 0, record: true });
  writeTortureHome(home, demo.baseUrl, [
    // `maxResumes: 1` is the behaviour before step resume (every started turn unknown).
    ...(options.maxResumes === undefined ? [] : [`recovery: {max_resumes: ${options.maxResumes}}`]),
  ]);
  const daemonLog = openLog(join(root, 'daemon.log'));
  const stateDb = homeLayout(home).stateDb('default');
  const store = sqliteEvidence(stateDb);
  const ledger = new Ledger();
  const { clients, ranLines } = workloadClients(work, ledger, options.clients ?? 3, log);
  const kills: Record<string, number> = {};
  const resolved = new Set<string>();
  const queuedWhenTampered = new Set<string>();
  /** Admissions left `running` by a kill: they are `unknown` after the restart. */
  const toResolve = new Map<string, Unknown>();
  /** Why each admission became `unknown` (its detail when the harness first saw it unknown). */
  const unknownReasons = new Map<string, string>();
  /** submission id → when the approver first approved its command (ms). */
  const approvals = new Map<string, number>();
  let epoch = 0;
  const progress = (): TortureProgress => ({
    kills,
    compressions: ledger.compressions,
    resets: [...ledger.resets.values()].reduce((a, b) => a + b, 0),
  });
  let iterationsRun = 0;

  try {
    for (let i = 0; iterationRuns(i, options.iterations, options.extend, progress); i++) {
      iterationsRun = i + 1;
      options.signal?.throwIfAborted();
      // Even iterations arm the next fault point (starting where the seed says, so short runs with
      // different seeds cover different points); odd ones kill at a random moment.
      const points = options.faults ?? FAULT_POINTS;
      const fault = i % 2 === 0 ? points[(options.seed + i / 2) % points.length]! : null;
      const env = fault ? { [FAULT_ENV]: `${fault}@${rng.int(1, 2)}` } : {};
      let daemon: DaemonProcess;
      try {
        daemon = await DaemonProcess.start(home, env, daemonLog, daemons);
      } catch (error) {
        // Recovery restarted queued turns before "ready", and one of them reached the fault.
        if (!(fault && error instanceof EarlyExit && error.exit.signal === 'SIGKILL')) throw error;
        kills[`${fault} (before ready)`] = (kills[`${fault} (before ready)`] ?? 0) + 1;
        for (const u of await runningAdmissions(store, ledger))
          if (!resolved.has(u.admission_id)) toResolve.set(u.admission_id, u);
        log(`iteration ${i + 1}/${options.iterations}: ${fault} kill during recovery`);
        continue;
      }
      if (daemon.epoch <= epoch)
        ledger.violations.push(`epoch ${daemon.epoch} after ${epoch}: not increasing`);
      epoch = daemon.epoch;
      const killAfter = fault ? (options.faultBudgetMs ?? FAULT_BUDGET_MS) : rng.int(30, 900);
      for (const c of clients)
        c.plan(
          rng,
          fault === 'creation.transaction' || rng.next() < 0.3,
          rng.int(2, 4),
          (id, r) =>
            fault === 'approval.pending' && r.next() < 0.5
              ? { text: `run: echo ${id} >> ran.log && sudo true`, tool: false }
              : workloadText(id, r),
          { reset: fault?.startsWith('reset.') === true, compress: fault?.startsWith('compress.') === true },
        );
      // Half of the unknowns stay unresolved for a while: what is queued behind them must wait.
      // Recovery resumed some of them (they are no longer unknown); the rest are, under a generation.
      await refreshUnknowns(store, toResolve, unknownReasons);
      const resolveNow = [...toResolve.values()].filter(() => rng.next() < 0.5);
      const stopApprover = new AbortController();
      const work = Promise.all([
        ...clients.map((c) => session(daemon, (g) => c.run(g))),
        session(daemon, (g) => approveMarked(g, ledger, approvals, stopApprover.signal)),
        session(daemon, (g) => resolveUnknowns(g, ledger, resolveNow, resolved, toResolve)),
      ]);
      const exit = await Promise.race([
        daemon.exited,
        sleep(killAfter).then(() => null),
        // A fault the workload never reaches: kill at random once the calls are done.
        ...(fault ? [work.then(() => sleep(rng.int(200, 1500))).then(() => null)] : []),
      ]);
      const by = exit?.signal === 'SIGKILL' && fault ? fault : 'random';
      kills[by] = (kills[by] ?? 0) + 1;
      await daemon.kill();
      stopApprover.abort();
      await work;
      for (const u of await runningAdmissions(store, ledger)) {
        if (!resolved.has(u.admission_id)) toResolve.set(u.admission_id, u);
      }
      if (options.tamper !== false && i % 8 === 5) {
        const kind = TAMPER_KINDS[(options.seed + Math.floor(i / 8)) % TAMPER_KINDS.length]!;
        const victim = await tamper(stateDb, ledger, kind, rng);
        if (victim) {
          ledger.tampered.set(victim.request_id, kind);
          for (const id of victim.queued) queuedWhenTampered.add(id);
          for (const u of [...toResolve.values()])
            if (u.request_id === victim.request_id) toResolve.delete(u.admission_id);
        }
      }
      log(
        `iteration ${i + 1}/${options.iterations}: ${by} kill, epoch ${epoch}, ${ledger.admissions.size} acknowledged`,
      );
    }

    // The final drain: no faults; every client retries what is pending; unknowns get resolved.
    const daemon = await DaemonProcess.start(home, {}, daemonLog, daemons);
    await refreshUnknowns(store, toResolve, unknownReasons);
    const stopApprover = new AbortController();
    const approving = session(daemon, (g) => approveMarked(g, ledger, approvals, stopApprover.signal));
    const transcripts = await drain(daemon, clients, ledger, [...toResolve.values()], resolved, log);
    stopApprover.abort();
    await approving;
    const stop = await daemon.stop();
    if (stop.code !== 0) {
      const reason = daemon.failureReason();
      ledger.violations.push(
        `graceful stop exited ${stop.code ?? stop.signal}${reason === null ? '' : ` (${reason})`}`,
      );
    }
    const evidence = {
      admissions: await store.admissions(),
      sessionsPerRequest: await store.sessionsPerRequest(),
    };
    const ran = ranLines();
    const { tally, violations } = checkInvariants({
      ledger,
      ...evidence,
      requests: demo.requests,
      ran,
      transcripts,
      resolved,
      queuedWhenTampered,
      unknownReasons,
      approvals,
      maxResumes: options.maxResumes ?? 3,
    });
    const untampered = [...ledger.sessions]
      .filter(([r]) => !ledger.tampered.has(r))
      .map(([, s]) => s.session_id);
    const lineage = checkLineages(daemon.layout.stateDb('default'), untampered, ledger.resets);
    violations.push(...lineage.violations);
    if (violations.length > 0) appendFileSync(join(root, 'violations.txt'), violations.join('\n'));
    return {
      seed: options.seed,
      iterations: iterationsRun,
      ...tally,
      kills,
      tampered: ledger.tampered.size,
      refused: ledger.refused,
      retries: ledger.retries,
      resets: lineage.resets,
      compressions: lineage.compressions,
      compressions_acknowledged: ledger.compressions,
      violations,
      home: root,
      elapsed_ms: Date.now() - began,
    };
  } finally {
    options.signal?.removeEventListener('abort', abandon);
    daemons.killAll();
    daemonLog.end();
    await demo.close();
    if (!options.keep) rmSync(root, { recursive: true, force: true });
  }
}

/** Connects and runs `fn`; a daemon that dies under it just ends the session. */
export async function session(daemon: DaemonProcess, fn: (g: GatewayClient) => Promise<void>): Promise<void> {
  let client: GatewayClient | null = null;
  try {
    client = await daemon.connect();
    await fn(client);
  } catch {
    // The daemon was killed: whatever was not acknowledged stays pending for the next round.
  } finally {
    await client?.close().catch(() => undefined);
  }
}

export interface Unknown {
  request_id: string;
  session_id: string;
  admission_id: string;
  generation: number;
}

export async function resolveUnknowns(
  g: GatewayClient,
  ledger: Ledger,
  now: Unknown[],
  resolved: Set<string>,
  later: Map<string, Unknown>,
): Promise<void> {
  for (const u of now) {
    try {
      const r = await g.call<{ resolved: boolean; duplicate: boolean }>('prompt.resolve_unknown', {
        session_id: u.session_id,
        admission_id: u.admission_id,
        execution_generation: u.generation,
      });
      // A repeat after a lost answer (refreshUnknowns keeps it) finds its own resolution.
      if (r.duplicate) ledger.retries++;
      if (r.resolved) resolved.add(u.admission_id);
      later.delete(u.admission_id);
    } catch (error) {
      if (g.closed) return; // stays in `later`: retried after the next restart
      later.delete(u.admission_id);
      ledger.violations.push(`resolve_unknown ${u.admission_id}: ${String(error)}`);
    }
  }
}

/** Admissions a kill left `running` (they become `unknown` at the next start), in known sessions. */
export async function runningAdmissions(store: StoreEvidence, ledger: Ledger): Promise<Unknown[]> {
  const requestOf = new Map([...ledger.sessions].map(([r, s]) => [s.session_id, r]));
  return (await store.unsettled()).flatMap((r) => {
    const request_id = requestOf.get(r.logical_id);
    return request_id && !ledger.tampered.has(request_id)
      ? [{ request_id, session_id: r.logical_id, admission_id: r.admission_id, generation: r.generation }]
      : [];
  });
}

export async function drain(
  daemon: DaemonProcess,
  clients: TortureClient[],
  ledger: Ledger,
  toResolve: Unknown[],
  resolved: Set<string>,
  log: (line: string) => void,
  /**
   * Rounds of retries before a pending call counts as never acknowledged, and the pause between
   * them (a cluster's reset waits while another instance's turns hold the session).
   */
  patience: { rounds: number; pauseMs: number } = { rounds: 4, pauseMs: 0 },
  /**
   * Whether an admission found unknown in the drain was made so after the drain began, and why
   * (recorded by the caller): in a cluster, an instance that stops itself during the drain leaves
   * its turns to a takeover, whose recovery decides as a start does. One daemon: never.
   */
  unknownSinceStart: (admissionId: string) => Promise<boolean> = () => Promise.resolve(false),
): Promise<Map<string, SnapshotMessage[]>> {
  let g = await daemon.connect();
  try {
    for (let round = 0; clients.some((c) => c.pending.length > 0); round++) {
      if (round >= patience.rounds) throw new Error('pending calls are never acknowledged');
      if (g.closed) {
        // The daemon closed the connection: one stopping itself is left for the caller to pass
        // over (a cluster's other instances); otherwise the next round runs on a new connection.
        const reason = daemon.failureReason();
        if (reason !== null) throw new Error(`the instance is stopping: ${reason}`);
        g = await daemon.connect();
      }
      if (round > 0) {
        const pending = clients.flatMap((c) =>
          c.pending.map((op) => `${c.name} ${op.kind} ${op.request_id}`),
        );
        const stopped = clients.flatMap((c) => (c.stoppedAt ? [`${c.name} at ${c.stoppedAt}`] : []));
        log(
          `drain round ${round}: ${pending.length} calls pending (${pending.slice(0, 3).join(', ')}); stopped: ${stopped.join('; ')}`,
        );
        await sleep(patience.pauseMs);
      }
      for (const c of clients) await c.run(g);
    }
    const leftover = new Map(toResolve.map((u) => [u.admission_id, u]));
    await resolveUnknowns(g, ledger, toResolve, resolved, leftover);
    const live = [...ledger.sessions].filter(([r]) => !ledger.tampered.has(r)).map(([, s]) => s.session_id);
    const deadline = Date.now() + 120_000;
    const transcripts = new Map<string, SnapshotMessage[]>();
    for (const id of live) {
      // A session slow to settle says, every few seconds, what it still holds (a run that fails
      // or times out here prints this log).
      let nextNote = Date.now() + 5_000;
      for (;;) {
        const snap = await g.call<{
          messages: SnapshotMessage[];
          pending_admissions: { admission_id: string; state: string; execution_generation: number }[];
        }>('session.resume', { session_id: id });
        // With one daemon an admission turns unknown only at a start, and after this start none is
        // left running; in a cluster also at a takeover during the drain (unknownSinceStart).
        const unknown = snap.pending_admissions.filter((a) => a.state === 'unknown');
        for (const a of unknown) {
          if (!(await unknownSinceStart(a.admission_id)))
            ledger.violations.push(
              `admission ${a.admission_id} still unknown in the drain (missed by the harness)`,
            );
          await resolveUnknowns(
            g,
            ledger,
            [
              {
                request_id: '',
                session_id: id,
                admission_id: a.admission_id,
                generation: a.execution_generation,
              },
            ],
            resolved,
            leftover,
          );
        }
        if (snap.pending_admissions.length === 0) {
          // The whole history across compressions and resets, each copied message once.
          const history = await g.call<{ messages: SnapshotMessage[] }>('session.history', {
            session_id: id,
          });
          transcripts.set(id, history.messages);
          break;
        }
        if (Date.now() > deadline) throw new Error(`session ${id} never drained`);
        if (Date.now() >= nextNote) {
          nextNote = Date.now() + 5_000;
          const held = snap.pending_admissions.map((a) => `${a.admission_id} ${a.state}`);
          log(`drain: session ${id} still holds ${held.join(', ')}`);
        }
        await sleep(50);
      }
    }
    log(`drained ${live.length} sessions`);
    return transcripts;
  } finally {
    await g.close();
  }
}
