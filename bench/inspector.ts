/**
 * The daemon's inspector (Chrome DevTools Protocol) for the memory benches: a daemon started with
 * `--inspect=127.0.0.1:0` can be made to collect its garbage and asked for process.memoryUsage().
 */
import WebSocket from 'ws';
import type { BenchDaemon } from './gateway-daemon.js';

export interface Inspector {
  send(method: string, params?: Record<string, unknown>): Promise<Record<string, unknown>>;
  close(): void;
}

/** The daemon's inspector (Chrome DevTools Protocol), started by `--inspect=127.0.0.1:0`. */
export async function inspector(daemon: BenchDaemon): Promise<Inspector> {
  const match = /Debugger listening on (ws:\/\/\S+)/.exec(daemon.stderr());
  if (!match) throw new Error(`the daemon's inspector did not start: ${daemon.stderr()}`);
  const socket = new WebSocket(match[1]!);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  let next = 0;
  return {
    send(method, params = {}) {
      const id = ++next;
      return new Promise((resolve, reject) => {
        socket.on('message', function onMessage(data) {
          const reply = JSON.parse((data as Buffer).toString()) as {
            id?: number;
            result?: Record<string, unknown>;
          };
          if (reply.id !== id) return;
          socket.off('message', onMessage);
          resolve(reply.result ?? {});
        });
        socket.once('error', reject);
        socket.send(JSON.stringify({ id, method, params }));
      });
    },
    close: () => socket.close(),
  };
}

/** Forces full GCs in the daemon. */
export async function forceGc(daemon: BenchDaemon): Promise<void> {
  const link = await inspector(daemon);
  for (let i = 0; i < 3; i++) await link.send('HeapProfiler.collectGarbage');
  link.close();
}

/** The daemon's process.memoryUsage(), in MiB, read over its inspector. */
export async function heapMiB(daemon: BenchDaemon): Promise<Record<string, number>> {
  const link = await inspector(daemon);
  const reply = await link.send('Runtime.evaluate', {
    expression: 'JSON.stringify(process.memoryUsage())',
    returnByValue: true,
  });
  link.close();
  const usage = JSON.parse((reply['result'] as { value: string }).value) as Record<string, number>;
  const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;
  return {
    heap_used_mib: mib(usage['heapUsed']!),
    heap_total_mib: mib(usage['heapTotal']!),
    external_mib: mib(usage['external']!),
    array_buffers_mib: mib(usage['arrayBuffers']!),
  };
}
