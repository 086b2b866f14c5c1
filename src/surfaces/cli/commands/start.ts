import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, statSync } from 'node:fs';
import type { GatewayInfo } from '../../../daemon/daemon.js';
import { daemonEnvironment } from '../../../daemon/allocator.js';
import { DaemonError } from '../../../daemon/errors.js';
import { gatewayState, readGatewayInfo } from '../../../daemon/gateway-state.js';
import { initHome, type HomeLayout } from '../../../daemon/home.js';
import { withListenerFlags } from '../../../daemon/config-listener.js';
import { cliHome, defaultPortTaken, note, say } from '../shared.js';
import { loadCliConfig } from '../load-config.js';

const READY_TIMEOUT_MS = 60_000;

/** `gatehouse start`: starts the gateway in the background unless one runs, and prints its URL. */
export async function start(flags: { port?: string; host?: string }): Promise<void> {
  const layout = cliHome();
  initHome(layout);
  // A bad config or flag is reported here, not buried in the log.
  const loaded = withListenerFlags(loadCliConfig(layout), flags);
  const state = gatewayState(layout);
  if (state.status === 'running') {
    say(`Gatehouse is already running at ${state.info.url} (pid ${state.pid}).`);
    return;
  }
  if (state.status === 'starting') {
    throw new DaemonError(
      'already_running',
      `a gateway is already starting on ${layout.root} (pid ${state.pid}): run "gatehouse status" in a moment`,
    );
  }
  const info = await spawnDaemon(layout, listenerArgs(flags));
  const fellBack = defaultPortTaken(loaded.config.listener.port, info.url);
  if (fellBack) note(fellBack);
  say(`Gatehouse is running at ${info.url} (pid ${info.pid}).`);
  say(`Model: ${info.model}. Logs: ${layout.logFile}. Stop it with "gatehouse stop".`);
}

function listenerArgs(flags: { port?: string; host?: string }): string[] {
  return [
    ...(flags.port !== undefined ? ['--port', flags.port] : []),
    ...(flags.host !== undefined ? ['--host', flags.host] : []),
  ];
}

/** Spawns `serve` detached, its output appended to the log, and waits for ready or for its death. */
export async function spawnDaemon(layout: HomeLayout, serveArgs: string[] = []): Promise<GatewayInfo> {
  const logOffset = fileSize(layout.logFile);
  const log = openSync(layout.logFile, 'a', 0o600);
  const script = process.argv[1]!;
  const child = spawn(process.execPath, [...process.execArgv, script, 'serve', ...serveArgs], {
    detached: true,
    stdio: ['ignore', log, log],
    env: daemonEnvironment(process.env),
  });
  closeSync(log);
  child.unref();

  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  child.once('exit', (code, signal) => (exited = { code, signal }));
  const end = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const info = readGatewayInfo(layout);
    if (info && info.pid === child.pid) return info;
    if (exited) {
      const reason = lastError(layout.logFile, logOffset);
      throw new DaemonError(
        'start_failed',
        reason ??
          `the gateway exited (code ${exited.code ?? exited.signal}) before it was ready; see ${layout.logFile}`,
      );
    }
    if (Date.now() > end) {
      throw new DaemonError(
        'start_failed',
        `the gateway (pid ${child.pid}) was not ready after ${READY_TIMEOUT_MS / 1000}s; see ${layout.logFile}`,
      );
    }
    // No portable event announces another process's file; a short bounded poll is the honest wait.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** The daemon's own one-line error from what it appended to the log, else its last error record. */
function lastError(logFile: string, offset: number): string | undefined {
  let text: string;
  try {
    text = readFileSync(logFile, 'utf8').slice(offset);
  } catch {
    return undefined;
  }
  const lines = text.split('\n').filter((line) => line.trim().length > 0);
  const plain = lines.filter(
    (line) => line.startsWith('gatehouse: ') && !line.startsWith('gatehouse: note:'),
  );
  if (plain.length > 0) return plain[plain.length - 1]!.slice('gatehouse: '.length);
  for (const line of lines.reverse()) {
    try {
      const record = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string } };
      if ((record.level ?? 0) >= 50) return [record.msg, record.err?.message].filter(Boolean).join(': ');
    } catch {
      continue;
    }
  }
  return undefined;
}
