/**
 * The `listener` section: where the gateway listens and who may reach it (AUTH-6). Remote peers
 * are accepted only when asked for, and then only behind TLS or an authenticating proxy; `serve
 * --port/--host` override the file within the same rules. The default port is fixed, so the
 * dashboard URL survives restarts.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { DaemonError } from './errors.js';

const proxyAddress = z
  .string()
  .refine((value) => isIP(value) !== 0, { error: 'must be the IP address of the proxy, e.g. 10.0.0.5' });

export const listenerSchema = z
  .strictObject({
    host: z.string().min(1).default('127.0.0.1'),
    // Absent: DEFAULT_PORT, or a free port when that one is taken (docs/decisions.md).
    port: z
      .number({ error: 'must be a port number (0 = any free port)' })
      .int()
      .min(0, { error: 'must be between 0 and 65535' })
      .max(65535, { error: 'must be between 0 and 65535' })
      .optional(),
    allow_remote: z.boolean().default(false),
    /** Open TCP connections at once; one more is refused at once with 503 too_many_connections. */
    max_connections: z
      .number({ error: 'must be a whole number of connections' })
      .int({ error: 'must be a whole number of connections' })
      .min(16, { error: 'must be at least 16' })
      .max(65536, { error: 'must be at most 65536' })
      .default(512),
    tls: z.strictObject({ cert: z.string().min(1), key: z.string().min(1) }).optional(),
    /**
     * AUTH-6: the addresses of an authenticating reverse proxy in front of a remote listener. Only
     * these peers (and loopback) may then connect.
     */
    trusted_proxy: z
      .union([proxyAddress, z.array(proxyAddress).min(1, { error: 'must list at least one address' })])
      .transform((value) => (Array.isArray(value) ? value : [value]))
      .optional(),
  })
  .superRefine((listener, ctx) => {
    if (isLoopback(listener.host)) return;
    if (!listener.allow_remote) {
      ctx.addIssue({
        code: 'custom',
        path: ['host'],
        message: `${listener.host} is not a loopback address; set listener.allow_remote: true to accept remote peers`,
      });
    } else if (!listener.tls && !listener.trusted_proxy) {
      ctx.addIssue({
        code: 'custom',
        path: ['allow_remote'],
        message:
          `listening on ${listener.host} would send passwords, cookies and tickets in clear text: ` +
          'set listener.tls.cert and listener.tls.key (PEM files) to serve HTTPS, or listener.trusted_proxy ' +
          'to the address of the authenticating proxy in front of it',
      });
    }
  });

export type ListenerSettings = z.output<typeof listenerSchema>;

/**
 * The listener's port when the config names none: fixed, so the dashboard URL is the same after
 * every restart. When another process holds it, the daemon takes a free port and says so.
 */
export { DEFAULT_PORT } from './default-port.js';

/** `serve --port/--host` (and `start`): command-line values win over listener.port/host. */
export function withListenerFlags<
  Loaded extends { readonly config: { readonly listener: ListenerSettings }; readonly file: string },
>(loaded: Loaded, flags: { port?: string; host?: string }): Loaded {
  if (flags.port === undefined && flags.host === undefined) return loaded;
  const listener = { ...loaded.config.listener };
  if (flags.port !== undefined) {
    const port = Number(flags.port);
    if (!/^\d+$/.test(flags.port) || port > 65535) {
      throw new DaemonError(
        'invalid_input',
        `--port must be a port number from 0 to 65535 (0 = any free port), got ${flags.port}`,
      );
    }
    listener.port = port;
  }
  if (flags.host !== undefined) {
    if (!listener.allow_remote && !isLoopback(flags.host)) {
      throw new DaemonError(
        'invalid_input',
        `--host ${flags.host} is not a loopback address: use 127.0.0.1, or set listener.allow_remote: true in ${loaded.file} (only behind TLS or an authenticating proxy)`,
      );
    }
    listener.host = flags.host;
  }
  return { ...loaded, config: { ...loaded.config, listener } };
}

export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}
