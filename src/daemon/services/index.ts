import type { LoadedConfig } from '../config.js';
import type { DaemonContext, DaemonService } from '../daemon.js';
import type { PlatformRegistry } from '../../surfaces/platforms/registry.js';
import type { MessagingService, MessagingServiceOptions } from './messaging.js';
import { gatewayService, type StoreHolder } from './gateway.js';

/**
 * The services `gatehouse serve` runs: the store, runtime, RPC listener and control socket, then
 * the messaging gateway when a chat platform is enabled. The daemon starts services in this order
 * and stops them in reverse, so the messaging gateway uses the gateway service's open store and is
 * stopped before that store closes.
 */
export function defaultServices(
  loaded?: Pick<LoadedConfig, 'config'>,
  options: {
    /** The chat platforms `platforms:` sections may name; default: builtinPlatforms(). */
    platforms?: PlatformRegistry;
    /** The daemon's environment as read at start (its secrets); process.env by default. */
    env?: NodeJS.ProcessEnv;
  } = {},
): DaemonService[] {
  const storeHolder: StoreHolder = {
    current: null,
    runtime: null,
    agents: null,
    liveKeys: [],
    platformPrompts: null,
    cluster: null,
    messagingEvents: null,
  };
  const env = options.env === undefined ? {} : { env: options.env };
  const services: DaemonService[] = [gatewayService({ storeHolder, ...env })];
  const platforms = Object.values(loaded?.config.platforms ?? {});
  if (platforms.some((section) => section?.enabled === true)) {
    services.push(
      lazyMessagingService(storeHolder, {
        stores: () => storeHolder.current,
        access: () => storeHolder.access ?? null,
        runtime: () => storeHolder.runtime ?? null,
        agents: () => storeHolder.agents ?? null,
        liveKeys: storeHolder.liveKeys!,
        platformPrompts: (broker) => storeHolder.platformPrompts?.(broker),
        cluster: () => storeHolder.cluster ?? null,
        ...env,
        events: (events) => storeHolder.messagingEvents?.(events),
        ...(options.platforms === undefined ? {} : { registry: options.platforms }),
      }),
    );
  }
  return services;
}

/**
 * The messaging gateway, whose engine and platform registry are loaded when it starts: a daemon
 * with no chat platform never loads them (each platform's SDK is loaded by its own factory, once
 * its section has passed its checks).
 */
function lazyMessagingService(holder: StoreHolder, options: MessagingServiceOptions): DaemonService {
  let service: MessagingService | null = null;
  // Scheduled jobs deliver their home-channel results through it, and local sessions name its platforms.
  holder.messaging = () => service?.gateway() ?? null;
  return {
    name: 'messaging gateway',
    async start(ctx: DaemonContext) {
      const { messagingService } = await import('./messaging.js');
      service = messagingService(options);
      await service.start(ctx);
    },
    drain: (deadline) => service?.drain(deadline) ?? Promise.resolve(),
    stop: () => service?.stop() ?? Promise.resolve(),
  };
}
