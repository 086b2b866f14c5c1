/**
 * What the files in <home>/run say about the daemon, for `status`, `start` and `stop`. A pid file
 * without a live gateway process is stale (the daemon crashed); gateway.json appears only once
 * the daemon is ready.
 */
import { readFileSync } from 'node:fs';
import type { GatewayInfo } from './daemon.js';
import type { HomeLayout } from './home.js';
import { readPid, runningPid } from './pidfile.js';

export type GatewayState =
  | { status: 'running'; pid: number; info: GatewayInfo }
  | { status: 'starting'; pid: number }
  | { status: 'stopped'; stalePid?: number };

export function readGatewayInfo(layout: HomeLayout): GatewayInfo | undefined {
  try {
    return JSON.parse(readFileSync(layout.gatewayJson, 'utf8')) as GatewayInfo;
  } catch {
    return undefined;
  }
}

export function gatewayState(layout: HomeLayout): GatewayState {
  const pid = runningPid(layout);
  if (pid === undefined) {
    const stalePid = readPid(layout.pidFile);
    return stalePid === undefined ? { status: 'stopped' } : { status: 'stopped', stalePid };
  }
  const info = readGatewayInfo(layout);
  return info && info.pid === pid ? { status: 'running', pid, info } : { status: 'starting', pid };
}
