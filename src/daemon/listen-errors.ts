/** One-line, actionable messages for a listener that cannot bind. */
import { DaemonError, oneLine } from './errors.js';
import type { DaemonContext } from './daemon.js';

export function listenError(error: NodeJS.ErrnoException, port: number, ctx: DaemonContext): DaemonError {
  if (error.code === 'EADDRINUSE') {
    return new DaemonError(
      'port_in_use',
      `port ${port} is already in use: choose another listener.port in ${ctx.configFile} or --port (0 picks a free one)`,
    );
  }
  if (error.code === 'EACCES') {
    return new DaemonError(
      'listen_failed',
      `not allowed to listen on port ${port}: choose a port above 1023 for listener.port in ${ctx.configFile} or --port`,
    );
  }
  if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') {
    return new DaemonError(
      'listen_failed',
      `cannot listen on ${ctx.config.listener.host}: it is not an address of this machine; fix listener.host in ${ctx.configFile} or --host`,
    );
  }
  return new DaemonError(
    'listen_failed',
    `cannot listen on ${ctx.config.listener.host}:${port} (${oneLine(error)})`,
  );
}
