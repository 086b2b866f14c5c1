/** What every command needs: the home from the environment, the config, and plain output. */
import { homeLayout, resolveHomeDir, type HomeLayout } from '../../daemon/home.js';
import { loadConfig, type LoadedConfig } from '../../daemon/config.js';
import type { DaemonService } from '../../daemon/daemon.js';

/** Hooks the lead wires in as the other parts land; each command says clearly when one is missing. */
export interface CliDeps {
  services(loaded: LoadedConfig): DaemonService[];
  runDemoModel?: (options: { port: number; latencyMs: number }) => Promise<void>;
}

export function cliHome(): HomeLayout {
  return homeLayout(resolveHomeDir());
}

export function loadCliConfig(layout: HomeLayout, { quiet = false } = {}): LoadedConfig {
  const loaded = loadConfig(layout.configFile);
  if (!quiet) for (const notice of loaded.notices) note(notice);
  return loaded;
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
