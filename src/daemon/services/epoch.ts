/**
 * Stand-in for the authority epoch until the store opens real ones (a durable number bumped at
 * every start). It advertises the start time in milliseconds: increasing across restarts on one
 * machine, and clearly not a store epoch. Replace this service with the store service.
 */
import type { DaemonService } from '../daemon.js';

export function placeholderEpochService(now: () => number = Date.now): DaemonService {
  return {
    name: 'epoch placeholder',
    start(ctx) {
      ctx.advertise({ epoch: now() });
      return Promise.resolve();
    },
    async drain() {},
    async stop() {},
  };
}
