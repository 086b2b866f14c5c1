/**
 * The port the daemon took when the default one was taken (issue 31 item 6), remembered in the home
 * so the dashboard URL stays the same across restarts: the next start listens there again, and
 * when that port is taken as well it fails with what to do instead of moving the URL once more.
 * A port the owner names (`listener.port`, `--port`) always wins and is never remembered.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_PORT } from './default-port.js';
import { DaemonError } from './errors.js';
import { writeFileAtomic } from './home.js';

/** In the home's root, beside config.yaml: it outlives every run (run/ is per run). */
export function chosenPortFile(homeRoot: string): string {
  return join(homeRoot, 'listener-port');
}

/** The remembered port, or null (none, or a file that does not hold a port: then it is ignored). */
export function readChosenPort(homeRoot: string): number | null {
  const file = chosenPortFile(homeRoot);
  if (!existsSync(file)) return null;
  const text = readFileSync(file, 'utf8').trim();
  const port = Number(text);
  return /^\d+$/.test(text) && port > 0 && port <= 65535 ? port : null;
}

export function rememberChosenPort(homeRoot: string, port: number): void {
  writeFileAtomic(chosenPortFile(homeRoot), `${port}\n`, 0o600);
}

/** Where to listen first, and whether a taken port may give way to a free one. */
export interface PortPlan {
  port: number;
  /** Only the unasked-for default gives way. */
  mayGiveWay: boolean;
  /** The port the gateway chose earlier (null: none was remembered, or the owner named one). */
  remembered: number | null;
}

export function portPlan(requested: number | undefined, remembered: number | null): PortPlan {
  if (requested !== undefined) return { port: requested, mayGiveWay: false, remembered: null };
  if (remembered !== null) return { port: remembered, mayGiveWay: false, remembered };
  return { port: DEFAULT_PORT, mayGiveWay: true, remembered: null };
}

/** The remembered port is taken now: moving the URL again would break the user's bookmark. */
export function rememberedPortTaken(port: number, homeRoot: string, configFile: string): DaemonError {
  return new DaemonError(
    'port_in_use',
    `port ${port} is in use: the gateway took it when the default port ${DEFAULT_PORT} was taken and keeps it so the dashboard URL stays the same; free it, set listener.port in ${configFile} (or --port), or delete ${chosenPortFile(homeRoot)} to let the gateway choose again`,
  );
}
