/**
 * The chat's way to the gateway: make sure a daemon runs in this home (starting one exactly as
 * `gatehouse start` does), get a fresh interactive ticket from the control socket, and connect.
 * Reconnection retries this with backoff; each attempt is a whole new ticket and socket.
 */
import { DaemonError, oneLine } from '../../../daemon/errors.js';
import type { GatewayInfo } from '../../../daemon/daemon.js';
import { gatewayState } from '../../../daemon/gateway-state.js';
import { initHome, type HomeLayout } from '../../../daemon/home.js';
import { requestTicketPatiently } from '../../control/client.js';
import { GatewayClient } from '../../client/rpc-client.js';
import { spawnDaemon } from '../commands/start.js';
import { note } from '../shared.js';

export interface Link {
  client: GatewayClient;
  info: GatewayInfo;
  /** True when this attempt started the daemon. */
  started: boolean;
}

const STARTING_WAIT_MS = 60_000;

/**
 * The running daemon's info, starting it when none runs — unless `start` is false (the chat
 * waiting after a deliberate stop must not undo it), when a stopped daemon is `not_available`.
 */
export async function ensureDaemon(
  layout: HomeLayout,
  start = true,
): Promise<{ info: GatewayInfo; started: boolean }> {
  const end = Date.now() + STARTING_WAIT_MS;
  for (;;) {
    const state = gatewayState(layout);
    if (state.status === 'running') return { info: state.info, started: false };
    if (state.status === 'stopped' && !start) {
      throw new DaemonError('not_available', 'the gateway is not running');
    }
    if (state.status === 'stopped') {
      initHome(layout);
      const info = await spawnDaemon(layout);
      // Said to a person only (a script reading stderr for failures is not disturbed), once per start.
      if (process.stderr.isTTY) {
        note(
          `started the gateway in the background (pid ${info.pid}, ${info.url ?? 'no URL'}); it keeps running after this command: "gatehouse stop" stops it`,
        );
      }
      return { info, started: true };
    }
    // Another process is starting it (or it is draining towards exit): wait for that to settle.
    if (Date.now() > end) {
      throw new DaemonError(
        'start_failed',
        `the gateway (pid ${state.pid}) did not become ready; see ${layout.logFile}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function openLink(layout: HomeLayout, options: { start?: boolean } = {}): Promise<Link> {
  const { info, started } = await ensureDaemon(layout, options.start ?? true);
  if (!info.url)
    throw new DaemonError('start_failed', `the gateway advertises no URL; see ${layout.logFile}`);
  // A full ticket book frees itself within one ticket lifetime: wait for it rather than give up,
  // and say once why nothing happens yet.
  const { ticket } = await requestTicketPatiently(layout.controlSocket, 'interactive', {
    onWait: (message, attempt) => {
      if (attempt === 0) note(`the gateway refused a ticket: ${message}; waiting for one to free up`);
    },
  });
  const client = await GatewayClient.connect(info.url, ticket);
  return { client, info, started };
}

/** Delay before reconnect attempt `attempt` (0-based): doubling from 100 ms, capped at 2 s. */
export function backoffMs(attempt: number): number {
  return Math.min(2000, 100 * 2 ** Math.min(attempt, 10));
}

/**
 * Retries openLink until it works or `giveUpMs` passes; `onRetry` hears each failure (the chat
 * shows the first one). A daemon that cannot start at all (bad config) ends the wait at once.
 */
export async function reopenLink(
  layout: HomeLayout,
  options: {
    giveUpMs: number;
    onRetry(reason: string, attempt: number): void;
    cancelled(): boolean;
    /** Whether to start the daemon when none runs; without, a stopped daemon ends the wait at once. */
    start?: boolean;
  },
): Promise<Link | null> {
  const end = Date.now() + options.giveUpMs;
  for (let attempt = 0; ; attempt++) {
    if (options.cancelled()) return null;
    try {
      return await openLink(layout, { start: options.start ?? true });
    } catch (error) {
      if (error instanceof DaemonError && error.code === 'start_failed' && attempt > 2) throw error;
      if (error instanceof DaemonError && error.code === 'not_available') throw error;
      if (Date.now() + backoffMs(attempt) > end) throw error;
      options.onRetry(oneLine(error), attempt);
    }
    await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt)));
  }
}
