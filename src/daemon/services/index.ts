import type { DaemonService } from '../daemon.js';
import { gatewayService } from './gateway.js';

/** The services `gatehouse serve` runs: the store, runtime, RPC listener and control socket. */
export function defaultServices(): DaemonService[] {
  return [gatewayService()];
}
