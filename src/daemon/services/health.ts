/**
 * A minimal HTTP listener answering GET /healthz, so the daemon is reachable end to end before the
 * RPC server exists. It owns the configured listener host and port, and advertises the URL.
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { DaemonError, oneLine } from '../errors.js';
import type { DaemonContext, DaemonService } from '../daemon.js';

type Server = ReturnType<typeof createHttpServer>;

export function healthService(): DaemonService {
  let server: Server | undefined;
  return {
    name: 'health listener',
    async start(ctx: DaemonContext) {
      const { host, port, tls } = ctx.config.listener;
      const handler = (request: IncomingMessage, response: ServerResponse) => {
        const ok = request.method === 'GET' && request.url === '/healthz';
        response.writeHead(ok ? 200 : 404, { 'content-type': 'application/json' });
        response.end(JSON.stringify(ok ? { ok: true, state: ctx.lifecycle.state } : { error: 'not_found' }));
      };
      server = tls ? createHttpsServer(readTls(tls, ctx.configFile), handler) : createHttpServer(handler);
      const listening = server;
      await new Promise<void>((resolve, reject) => {
        listening.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, port, ctx)));
        listening.listen(port, host, () => resolve());
      });
      const address = listening.address() as AddressInfo;
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      ctx.advertise({ url: `${tls ? 'https' : 'http'}://${shownHost}:${address.port}` });
    },
    async drain() {
      // Health answers stay available while draining; they report the state.
    },
    async stop() {
      const closing = server;
      server = undefined;
      if (!closing?.listening) return;
      closing.closeAllConnections();
      await new Promise<void>((resolve) => closing.close(() => resolve()));
    },
  };
}

function readTls(tls: { cert: string; key: string }, configFile: string): { cert: Buffer; key: Buffer } {
  try {
    return { cert: readFileSync(tls.cert), key: readFileSync(tls.key) };
  } catch (error) {
    throw new DaemonError(
      'listen_failed',
      `cannot read the TLS files of listener.tls (${oneLine(error)}): fix the paths in ${configFile}`,
    );
  }
}

function listenError(error: NodeJS.ErrnoException, port: number, ctx: DaemonContext): DaemonError {
  if (error.code === 'EADDRINUSE') {
    return new DaemonError(
      'port_in_use',
      `port ${port} is already in use: choose another listener.port in ${ctx.configFile} (0 picks a free one)`,
    );
  }
  if (error.code === 'EACCES') {
    return new DaemonError(
      'listen_failed',
      `not allowed to listen on port ${port}: choose a port above 1023 for listener.port in ${ctx.configFile}`,
    );
  }
  if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') {
    return new DaemonError(
      'listen_failed',
      `cannot listen on ${ctx.config.listener.host}: it is not an address of this machine; fix listener.host in ${ctx.configFile}`,
    );
  }
  return new DaemonError(
    'listen_failed',
    `cannot listen on ${ctx.config.listener.host}:${port} (${oneLine(error)})`,
  );
}
