/**
 * The runtime's parts together, for real: the demo model over loopback HTTP, the built-in tools from
 * the registry, the PromptBroker, and a SqliteSessionStore file in a temp dir as the transcript
 * sink. Each rig owns one temp dir (the session cwd lives inside it) and cleans up after itself.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Lifecycle } from '../../../src/runtime/approvals/lifecycle.js';
import { FileAlwaysAllowStore } from '../../../src/runtime/approvals/always-store.js';
import { PromptBroker, type BrokerEvent } from '../../../src/runtime/approvals/broker.js';
import { startDemoModel, type DemoModelServer } from '../../../src/runtime/demo/server.js';
import { ModelClient } from '../../../src/runtime/model/client.js';
import { runTurn, type RunTurnOptions, type TurnResult } from '../../../src/runtime/runner.js';
import { resolveToolsets } from '../../../src/runtime/tools/registry.js';
import type { TranscriptSink, TurnEvent } from '../../../src/runtime/types.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { source } from '../../shared/fixtures.js';

export interface Rig {
  /** The temp dir the rig owns; removed by cleanup. */
  dir: string;
  /** The session's working directory (inside `dir`). */
  cwd: string;
  dbFile: string;
  store: SqliteSessionStore;
  demo: DemoModelServer;
  broker: PromptBroker;
  /** The physical session every turn of this rig writes to. */
  sessionId: string;
  /** The always-allow file the broker persists `always` answers in. */
  alwaysFile: string;
  /** A session id for another conversation in the same store (e.g. after a restart). */
  newSession(key: string): Promise<string>;
  cleanup(): Promise<void>;
}

export async function startRig(options: { approvalTimeoutMs?: number } = {}): Promise<Rig> {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'gh-runtime-')));
  const cwd = path.join(dir, 'work');
  fs.mkdirSync(cwd);
  const dbFile = path.join(dir, 'gatehouse.db');
  const alwaysFile = path.join(dir, 'approvals.json');
  const store = SqliteSessionStore.open(dbFile);
  const demo = await startDemoModel();
  const broker = new PromptBroker({
    alwaysAllow: new FileAlwaysAllowStore(alwaysFile),
    ...(options.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: options.approvalTimeoutMs } : {}),
  });
  const newSession = async (key: string) =>
    (await store.getOrCreateSession(key, source({ platform: 'local' }))).entry.session_id;
  return {
    dir,
    cwd,
    dbFile,
    store,
    demo,
    broker,
    alwaysFile,
    sessionId: await newSession('agent:main:local:dm:it'),
    newSession,
    async cleanup() {
      await demo.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The store as the runner's TranscriptSink: each message is durable before the runner goes on. */
export function storeSink(store: SqliteSessionStore): TranscriptSink {
  return {
    async append(sessionId, messages) {
      await store.appendToTranscript(sessionId, messages);
    },
  };
}

export interface RunningTurn {
  events: TurnEvent[];
  /** The turn's events as they happen: tests wait on them instead of sleeping. */
  bus: Lifecycle<TurnEvent>;
  controller: AbortController;
  done: Promise<TurnResult>;
}

/** A turn of the rig's session with the real terminal and clarify tools; overrides change one thing. */
export function startTurn(rig: Rig, text: string, overrides: Partial<RunTurnOptions> = {}): RunningTurn {
  const events: TurnEvent[] = [];
  const bus = new Lifecycle<TurnEvent>();
  const controller = new AbortController();
  const options: RunTurnOptions = {
    sessionId: rig.sessionId,
    admissionId: 'adm-it',
    executionGeneration: 1,
    model: new ModelClient({ baseUrl: rig.demo.baseUrl, model: 'gatehouse-demo', retry: { baseDelayMs: 1 } }),
    systemPrompt: 'Integration test session.',
    tools: resolveToolsets(['terminal', 'clarify']),
    cwd: rig.cwd,
    yolo: false,
    maxTurns: 4,
    history: [],
    input: { role: 'user', content: text },
    transcript: storeSink(rig.store),
    prompts: rig.broker,
    signal: controller.signal,
    emit: (event) => {
      events.push(event);
      bus.emit(event);
    },
    ...overrides,
  };
  return { events, bus, controller, done: runTurn(options) };
}

/** The next prompt the broker opens (call before starting the turn that will open it). */
export function nextPrompt(broker: PromptBroker): Promise<Extract<BrokerEvent, { type: 'prompt:opened' }>> {
  return broker.events.next('prompt:opened');
}

/** What the model was sent last in request number `n` (0-based) of the demo model. */
export function lastMessageSent(
  demo: DemoModelServer,
  n: number,
): { role?: unknown; content?: unknown; tool_call_id?: unknown } | undefined {
  const messages = demo.requests[n]?.body?.messages ?? [];
  return messages[messages.length - 1];
}

/** Is process `pid` running? A zombie (dead, not yet reaped) counts as gone. */
export function isRunning(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Running (non-zombie) members of process group `pgid`, from /proc. */
export function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') members.push(Number(entry));
    } catch {
      // It ended while we looked.
    }
  }
  return members;
}

/** Resolves with the file's trimmed text once it holds a full line (fs.watch, no polling loop). */
export function waitForLine(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const watcher = fs.watch(path.dirname(file));
    const check = () => {
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch {
        return;
      }
      if (!text.endsWith('\n')) return;
      watcher.close();
      resolve(text.trim());
    };
    watcher.on('change', check);
    watcher.on('error', (error) => {
      watcher.close();
      reject(error);
    });
    check();
  });
}
