/**
 * The real MCP servers the MCP end-to-end tests talk to, from node_modules: the reference
 * `server-everything` (stdio or Streamable HTTP) and `server-filesystem` (stdio). Each server a test
 * starts carries a marker argument of its own, so the test finds exactly its processes (and only
 * they are stopped by id afterwards).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, beforeAll, describe } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { BACKENDS, nextEvent, sessionEvent, type SessionEvent } from './gateway-harness.js';
import { useFixture, type Fixture } from './seed-fixture.js';

const MODULES = resolve(import.meta.dirname, '../../node_modules');
export const EVERYTHING = resolve(MODULES, '@modelcontextprotocol/server-everything/dist/index.js');
export const FILESYSTEM = resolve(MODULES, '@modelcontextprotocol/server-filesystem/dist/index.js');
/** Where `npm install` puts the servers' commands (`mcp-server-everything`, …). */
export const BIN = resolve(MODULES, '.bin');

/** A marker no other process on the machine carries. */
export function marker(): string {
  return `gh-mcp-${randomBytes(6).toString('hex')}`;
}

/** The pids of live processes whose command line holds `mark`. */
export function pidsWith(mark: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      if (cmdline.includes(mark) && state !== 'Z') out.push(Number(entry));
    } catch {
      // Gone while we looked.
    }
  }
  return out;
}

const started: ChildProcess[] = [];
const marks: string[] = [];

/**
 * Stops, after each test of the calling file, the servers it started and the processes of its markers.
 * A function each file calls, not a hook at this module's top level: end-to-end files share their
 * worker's loaded modules, so this module runs once per worker and a top-level hook would be
 * registered in the first file that imported it only.
 */
export function useMcpCleanup(): void {
  afterEach(() => {
    for (const child of started.splice(0)) child.kill('SIGKILL');
    // Servers a killed daemon left behind (they end when their stdin closes, but not always at once).
    for (const mark of marks.splice(0))
      for (const pid of pidsWith(mark)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone.
        }
      }
  });
}

/**
 * The setup of every MCP end-to-end file: the daemon fixture (seed-fixture.ts) and the cleanup of
 * the MCP servers its tests start, both registered in the calling file.
 */
export function useMcpFixture(): Fixture {
  const fx = useFixture();
  useMcpCleanup();
  return fx;
}

/** `describe.each(BACKENDS)`: the block once per store, its daemons started on that store. */
export function describeEachStore(fx: Fixture, title: string, body: () => void): void {
  describe.each(BACKENDS)(title, (store) => {
    beforeAll(() => {
      fx.store = store;
    });
    body();
  });
}

/** Registers a marker whose processes are stopped after the test. */
export function tracked(mark = marker()): string {
  marks.push(mark);
  return mark;
}

/** The TCP port a process listens on (read from /proc: its socket inodes among the listeners). */
function listeningPort(pid: number): number | null {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m) inodes.add(m[1]!);
    } catch {
      // Closed meanwhile.
    }
  }
  for (const table of ['/proc/net/tcp6', '/proc/net/tcp']) {
    let lines: string[];
    try {
      lines = readFileSync(table, 'utf8').trim().split('\n').slice(1);
    } catch {
      continue;
    }
    for (const line of lines) {
      const f = line.trim().split(/\s+/);
      if (f[3] === '0A' && inodes.has(f[9]!)) return parseInt(f[1]!.split(':')[1]!, 16);
    }
  }
  return null;
}

/** server-everything over Streamable HTTP on a free port (PORT=0); its URL once it listens. */
export async function startHttpEverything(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp', tracked()], {
    env: { PATH: process.env.PATH ?? '', PORT: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  started.push(child);
  await new Promise<void>((resolve, reject) => {
    let text = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('listening on port')) resolve();
    });
    child.once('exit', () => reject(new Error(`server-everything exited: ${text}`)));
  });
  const port = listeningPort(child.pid!);
  if (port === null) throw new Error('server-everything listens on no port');
  return { url: `http://127.0.0.1:${port}/mcp`, child };
}

export type Event = SessionEvent['event'];

/** Submits `text` and collects the session's events until its turn.complete. */
export async function turnEvents(
  client: GatewayClient,
  sessionId: string,
  submissionId: string,
  text: string,
  timeoutMs = 60_000,
): Promise<Event[]> {
  const events: Event[] = [];
  const off = client.onNotification((n) => {
    const e = sessionEvent(n);
    if (e?.session_id === sessionId) events.push(e.event);
  });
  const done = nextEvent(client, 'turn.complete', (e) => e.session_id === sessionId, timeoutMs);
  await client.call('prompt.submit', { session_id: sessionId, submission_id: submissionId, text });
  await done.finally(off);
  return events;
}

/** The stored result of a turn's (only) tool call, with the complete event. */
export function toolResultOf(events: Event[]): { content: string; is_error: boolean; name: string } {
  const stored = events.find(
    (e) => e.type === 'message.stored' && (e['message'] as { role?: string }).role === 'tool',
  );
  if (!stored) throw new Error(`no tool result among ${events.map((e) => e.type).join(', ')}`);
  const message = stored['message'] as { content: string; name: string; tool_outcome: { is_error: boolean } };
  return { content: message.content, is_error: message.tool_outcome.is_error, name: message.name };
}

/** How the turn among `events` ended. */
export function outcomeOf(events: Event[]): unknown {
  return events.find((e) => e.type === 'turn.complete')?.['outcome'];
}

/** Every file under `dir` whose bytes hold `needle` (a store, its WAL, logs, backups…). */
export function filesHolding(dir: string, needle: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat?.isDirectory()) found.push(...filesHolding(path, needle));
    else if (stat?.isFile() && readFileSync(path).includes(needle)) found.push(path);
  }
  return found;
}
