/**
 * Named fault points, for crash tests only. Inert unless the environment variable
 * GATEHOUSE_TEST_FAULTS names points, e.g. `admission.committed` or `tool.running@3` (the third hit).
 * When an armed point is reached the daemon SIGKILLs itself there: no cleanup, no flush, exactly
 * like a power cut or `kill -9`. Never set it outside tests.
 *
 * Points: admission.committed (after the commit, before the acknowledgement), turn.claimed (after
 * the claim, before the turn writes anything or calls the model), model.streaming (during a streamed answer), tool.recorded
 * (the tool call is stored, the tool has not run), tool.running (while the tool runs: as soon as the
 * terminal command's process exists; a safe-mode command, run by its worker, never hits it), tool.result
 * (the tool finished, its result not yet stored), approval.pending (a human is being asked),
 * creation.transaction (inside the creation transaction), settle.transaction (inside settlement),
 * reset.transaction (inside the reset transaction, after the new transcript and route are written),
 * reset.committed (the reset is committed, memory and the caller not yet told), compress.summarised
 * (the summary call answered, nothing published), compress.transaction (inside the publication
 * transaction, after the child transcript, route and receipt are written), compress.committed (the
 * publication is committed, memory and viewers not yet told). One point does not kill: tool.emfile
 * makes that terminal command's spawn meet a full descriptor table (EMFILE, for real: the daemon
 * opens /dev/null until the kernel refuses, spawns, then closes them), as a daemon whose limit idle
 * connections used up would; the call must fail and the daemon live on.
 */
import fs from 'node:fs';
import { setSpawnHook } from '../runtime/tools/process-group.js';
import { onTerminalProcess } from '../runtime/tools/terminal.js';
import type { Logger } from './logger.js';

export const FAULT_ENV = 'GATEHOUSE_TEST_FAULTS';

export const FAULT_POINTS = [
  'admission.committed',
  'turn.claimed',
  'model.streaming',
  'tool.recorded',
  'tool.running',
  'tool.result',
  'approval.pending',
  'creation.transaction',
  'settle.transaction',
  'reset.transaction',
  'reset.committed',
  'compress.summarised',
  'compress.transaction',
  'compress.committed',
] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

/** Points that do not kill the daemon but make something fail in it (the crash torture skips them). */
export const FAULT_TRAPS = ['tool.emfile'] as const;

/**
 * Points of scheduled jobs (docs/scheduling.md), outside the torture's turn workload: job.decided
 * (a firing is recorded pending, its session not yet created nor its admission committed).
 */
export const JOB_FAULT_POINTS = ['job.decided'] as const;

/**
 * Points of durable steer (docs/scheduling.md, issue 28), outside the torture's turn workload:
 * steer.applied (a steer is stored in the running turn, the model call that sees it not yet made).
 */
export const STEER_FAULT_POINTS = ['steer.applied'] as const;

/**
 * Background delegations (docs/scheduling.md): after a delegation's result was admitted into its
 * parent, before the delegation is marked reported; the restart must find the admission already there.
 */
export const DELEGATION_FAULT_POINTS = ['delegation.reported'] as const;

/** Which turn events mark which fault point (see turn-job publish). */
const EVENT_POINTS: Record<string, FaultPoint> = {
  'text.delta': 'model.streaming',
  'tool.start': 'tool.recorded',
  'approval.request': 'approval.pending',
};

export interface Faults {
  hit(point: string): void;
  /** A turn event was published; some events stand for fault points. */
  observe(eventType: string): void;
}

export function parseFaultSpec(spec: string): Map<string, number> {
  const armed = new Map<string, number>();
  for (const part of spec
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [name, nth] = part.split('@');
    const known: readonly string[] = [
      ...FAULT_POINTS,
      ...FAULT_TRAPS,
      ...JOB_FAULT_POINTS,
      ...STEER_FAULT_POINTS,
      ...DELEGATION_FAULT_POINTS,
    ];
    if (!known.includes(name!)) {
      throw new Error(`${FAULT_ENV}: unknown fault point "${name}"; known: ${known.join(', ')}`);
    }
    const n = nth === undefined ? 1 : Number(nth);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${FAULT_ENV}: "${part}" needs a positive hit count`);
    armed.set(name!, n);
  }
  return armed;
}

export function faultsFromEnv(env: NodeJS.ProcessEnv, logger: Logger): Faults | null {
  const spec = env[FAULT_ENV];
  if (!spec) return null;
  const armed = parseFaultSpec(spec);
  const hits = new Map<string, number>();
  logger.warn(
    { faults: [...armed.keys()] },
    'TEST FAULT POINTS ARMED: this daemon will kill itself on purpose',
  );
  const hit = (point: string): void => {
    const at = armed.get(point);
    if (at === undefined) return;
    const count = (hits.get(point) ?? 0) + 1;
    hits.set(point, count);
    if (count === at) process.kill(process.pid, 'SIGKILL');
  };
  // While the tool runs: once its process exists. (A timer after tool.start, as before, could fire
  // before the process was spawned: the tool's durable start mark is committed in between, and on
  // a loaded machine that commit takes longer than any fixed delay; the command then never ran.)
  if (armed.has('tool.running')) onTerminalProcess(() => hit('tool.running'));
  const emfileAt = armed.get('tool.emfile');
  if (emfileAt !== undefined) {
    let spawns = 0;
    setSpawnHook((start) => (++spawns === emfileAt ? withFullDescriptorTable(start) : start()));
  }
  return {
    hit,
    observe(eventType) {
      const point = EVENT_POINTS[eventType];
      if (point !== undefined) hit(point);
    },
  };
}

/** Runs `run` with every free descriptor taken, then frees them. */
function withFullDescriptorTable<T>(run: () => T): T {
  const taken: number[] = [];
  try {
    for (;;) taken.push(fs.openSync('/dev/null', 'r'));
  } catch {
    // EMFILE: the table is full.
  }
  try {
    return run();
  } finally {
    for (const fd of taken) fs.closeSync(fd);
  }
}
