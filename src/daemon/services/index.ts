import type { LoadedConfig } from '../config.js';
import type { DaemonService } from '../daemon.js';
import { messagingService } from '../../surfaces/platforms/service.js';
import { gatewayService, type StoreHolder } from './gateway.js';

/**
 * The services `gatehouse serve` runs: the store, runtime, RPC listener and control socket, then
 * the messaging gateway when a chat platform is enabled. The daemon starts services in this order
 * and stops them in reverse, so the messaging gateway uses the gateway service's open store and is
 * stopped before that store closes.
 */
export function defaultServices(loaded?: Pick<LoadedConfig, 'config'>): DaemonService[] {
  const storeHolder: StoreHolder = { current: null };
  const services: DaemonService[] = [gatewayService({ storeHolder })];
  const telegram = loaded?.config.platforms.telegram;
  if (telegram !== undefined && telegram.enabled) {
    services.push(messagingService({ store: () => storeHolder.current }));
  }
  return services;
}
