import { DaemonError } from '../../../daemon/errors.js';
import { gatewayState } from '../../../daemon/gateway-state.js';
import { isAlive, removeQuietly } from '../../../daemon/pidfile.js';
import { cliHome, pollUntil, say } from '../shared.js';
import { loadCliConfig } from '../load-config.js';

/** Beyond the drain timeout, time for stopping services and writing the last log lines. */
const STOP_GRACE_S = 15;

/** `gatehouse stop`: SIGTERM to the running gateway, then waits for it to drain and exit. */
export async function stop(): Promise<void> {
  const layout = cliHome();
  const state = gatewayState(layout);
  if (state.status === 'stopped') {
    if (state.stalePid !== undefined) {
      removeQuietly(layout.pidFile);
      removeQuietly(layout.gatewayJson);
    }
    say(`Gatehouse is not running (home ${layout.root}); nothing to stop.`);
    return;
  }
  let drainS = 30;
  try {
    drainS = loadCliConfig(layout, { quiet: true }).config.drain_timeout_s;
  } catch {
    // The running daemon read its config at start; a file broken since must not block stop.
  }
  process.kill(state.pid, 'SIGTERM');
  const began = Date.now();
  say(
    `Stopping the gateway (pid ${state.pid}): running turns may finish first, for up to ${drainS}s (drain_timeout_s), then it exits.`,
  );
  // At a terminal the wait is never silent: how long it has waited, redrawn in place.
  const live = process.stdout.isTTY === true;
  const waited = () => ((Date.now() - began) / 1000).toFixed(1);
  const ticker = live
    ? setInterval(
        () =>
          process.stdout.write(
            `\r\u001b[2K  waiting for pid ${state.pid} to exit: ${Math.floor((Date.now() - began) / 1000)}s`,
          ),
        1000,
      )
    : undefined;
  const gone = await pollUntil(() => (isAlive(state.pid) ? undefined : true), {
    timeoutMs: (drainS + STOP_GRACE_S) * 1000,
  });
  clearInterval(ticker);
  if (live) process.stdout.write('\r\u001b[2K');
  if (!gone) {
    throw new DaemonError(
      'stop_timeout',
      `the gateway (pid ${state.pid}) is still running ${drainS + STOP_GRACE_S}s after SIGTERM; check ${layout.logFile}, or end it with "kill -9 ${state.pid}"`,
    );
  }
  say(`Gatehouse stopped (pid ${state.pid}) after ${waited()}s.`);
}
