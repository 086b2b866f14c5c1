import type { DaemonService } from '../daemon.js';
import { placeholderEpochService } from './epoch.js';
import { healthService } from './health.js';

/** The services `gatehouse serve` runs today. The store, runtime, RPC and control socket join here. */
export function defaultServices(): DaemonService[] {
  return [placeholderEpochService(), healthService()];
}
