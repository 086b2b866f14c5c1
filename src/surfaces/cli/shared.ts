/**
 * What every command needs: the home from the environment and plain output. The config is read
 * through load-config.ts, which a command imports only when it reads the config.
 */
import { homeLayout, resolveHomeDir, type HomeLayout } from '../../daemon/home.js';
import type { LoadedConfig } from '../../daemon/config.js';
import { DEFAULT_PORT } from '../../daemon/default-port.js';
import type { DaemonService } from '../../daemon/daemon.js';

/**
 * Hooks main.ts wires in; each command says clearly when one is missing. `services` is a promise so
 * that the daemon's modules are loaded only by `gatehouse serve`.
 */
export interface CliDeps {
  services(loaded: LoadedConfig, env: NodeJS.ProcessEnv): Promise<DaemonService[]>;
  runDemoModel?: (options: { port: number; latencyMs: number }) => Promise<void>;
}

export function cliHome(): HomeLayout {
  return homeLayout(resolveHomeDir());
}

export function say(line = ''): void {
  process.stdout.write(`${line}\n`);
}

export function note(line: string): void {
  process.stderr.write(`gatehouse: note: ${line}\n`);
}

/** Polls `check` every `intervalMs` until it returns a value or `timeoutMs` passes. */
export async function pollUntil<T>(
  check: () => T | undefined,
  { intervalMs = 50, timeoutMs }: { intervalMs?: number; timeoutMs: number },
): Promise<T | undefined> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() >= end) return undefined;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** The note to give when the default port was taken and a free one used instead, else null. */
export function defaultPortTaken(
  configured: number | undefined,
  url: string | null | undefined,
): string | null {
  if (configured !== undefined || !url || new URL(url).port === String(DEFAULT_PORT)) return null;
  return `port ${DEFAULT_PORT} (the default) was taken, so the gateway listens on ${url} and keeps that port across restarts (the dashboard URL stays the same); set listener.port or --port to insist on one`;
}
