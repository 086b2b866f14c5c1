/**
 * Helpers for the crash-recovery e2e tests: a demo model the test owns (it records every request
 * with its admission header), the daemon pointed at it, and waits on the events a settled queue emits.
 */
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { ADMISSION_HEADER } from '../../src/runtime/runner.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { exited, requireBuild } from './cli.js';
import {
  dropTestSchemas,
  keepTestSchema,
  resumeUntil,
  startDaemon,
  type Backend,
  type RunningDaemon,
} from './gateway-harness.js';

export interface Snapshot {
  session_id: string;
  state: string;
  paused_reason: string | null;
  epoch: number;
  messages: {
    role: string;
    content: string | null;
    admission_id?: string;
    tool_calls?: { id: string }[];
    tool_call_id?: string;
  }[];
  pending_admissions: {
    admission_id: string;
    submission_id: string;
    state: string;
    execution_generation: number | null;
  }[];
  /** The turn holding the session's slot, if one does. */
  running: { admission_id: string; generation: number } | null;
}

/** The contents of a snapshot's messages, in order. */
export const texts = (snap: Snapshot): (string | null)[] => snap.messages.map((m) => m.content);

export interface Ack {
  admission_id: string;
  state: string;
  seq: number;
  duplicate: boolean;
}

export class RecoveryRig {
  readonly models: DemoModelServer[] = [];
  readonly daemons: RunningDaemon[] = [];
  /** The store the daemons run on (`store.kind`); a case may run on each. */
  store: Backend = 'sqlite';
  /** The schemas of a shared rig's homes (kept past each case), by home: what drops each. */
  readonly #kept: Map<string, () => Promise<void>> | null;

  /** `shared`: its daemons serve several cases, so their schemas outlive each case (useSharedRig). */
  constructor(shared = false) {
    this.#kept = shared ? new Map() : null;
  }

  async model(): Promise<DemoModelServer> {
    const demo = await startDemoModel({ host: '127.0.0.1', port: 0, record: true });
    this.models.push(demo);
    return demo;
  }

  async daemon(options: { home?: string; config: string; env?: NodeJS.ProcessEnv }): Promise<RunningDaemon> {
    const d = await startDaemon({ ...options, store: this.store });
    this.daemons.push(d);
    if (this.#kept !== null && !this.#kept.has(d.home)) this.#kept.set(d.home, keepTestSchema(d.home));
    return d;
  }

  /**
   * A daemon armed to SIGKILL itself while it recovers (a resumed turn reaches its fault point):
   * resolves once it died, whether before or after it said it was ready.
   */
  async dyingDaemon(options: { home: string; config: string; env: NodeJS.ProcessEnv }): Promise<void> {
    try {
      await died(await this.daemon(options));
    } catch (error) {
      if (!/exited with null before/.test(String(error))) throw error;
    }
  }

  async cleanup(): Promise<void> {
    for (const m of this.models) m.release();
    await Promise.all(this.daemons.splice(0).map((d) => d.kill().catch(() => undefined)));
    await Promise.all(this.models.splice(0).map((m) => m.close().catch(() => undefined)));
    if (this.#kept === null) return dropTestSchemas();
    const kept = [...this.#kept.values()];
    this.#kept.clear();
    for (const drop of kept) await drop();
  }
}

/**
 * The rig of the calling test file: the build is checked before its tests, and every daemon and
 * model a test started is gone after it (register hooks that need the daemons down, such as a
 * schema's drop, before this call: vitest runs after-hooks last-registered first).
 */
export function useRecoveryRig(): RecoveryRig {
  const rig = new RecoveryRig();
  beforeAll(requireBuild);
  afterEach(() => rig.cleanup());
  return rig;
}

/**
 * A rig for the cases of the calling `describe` block that share its daemons (one start, a session or
 * job per case, one stop or SIGKILL and one restart for all): its daemons, models and schemas are
 * gone after the block, not after each case. Each case still checks only its own session or job.
 */
export function useSharedRig(): RecoveryRig {
  const rig = new RecoveryRig(true);
  afterAll(() => rig.cleanup());
  return rig;
}

export function modelConfig(demo: DemoModelServer, ...lines: string[]): string {
  return [`model: {base_url: ${JSON.stringify(demo.baseUrl)}, model: gatehouse-demo}`, ...lines].join('\n');
}

/** Model requests that open a turn of `admissionId` (its input is the last message). */
export function turnStarts(demo: DemoModelServer, admissionId: string): number {
  return demo.requests.filter((r) => {
    const messages = r.body?.messages ?? [];
    return r.headers[ADMISSION_HEADER] === admissionId && messages[messages.length - 1]?.role === 'user';
  }).length;
}

/** Every request the model received for `admissionId`, in arrival order. */
export function admissionOrder(demo: DemoModelServer): string[] {
  const seen: string[] = [];
  for (const r of demo.requests) {
    const id = r.headers[ADMISSION_HEADER];
    if (typeof id === 'string' && !seen.includes(id)) seen.push(id);
  }
  return seen;
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'gh-rec-'));
}

export function ranLog(cwd: string): string[] {
  const file = join(cwd, 'ran.log');
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** Resolves once the daemon process has exited (it SIGKILLed itself at a fault point). */
export async function died(d: RunningDaemon): Promise<void> {
  await exited(d.child);
}

/**
 * Waits until the session has nothing queued or running (unknown admissions may remain). Both: a
 * settlement is visible in the store as soon as it commits, while its turn still holds the
 * session's slot until the flush that makes it durable has returned to it (`running` in the
 * snapshot), and a control sent in between is refused as busy.
 */
export function quiet(client: GatewayClient, sessionId: string): Promise<Snapshot> {
  return resumeUntil<Snapshot>(
    client,
    sessionId,
    (snap) => snap.running === null && snap.pending_admissions.every((a) => a.state === 'unknown'),
  );
}
