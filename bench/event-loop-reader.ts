/**
 * The big session's client of the event-loop bench (event-loop.bench.ts), in a process of its own:
 * its replies are tens of megabytes (the whole history of a 100,000-message session), and parsing
 * one takes its process's event loop for hundreds of milliseconds. In the bench's own process that
 * stall fell on the ordinary sessions' clients, whose turn times the bench measures, and counted
 * against the daemon. A real reader is another program; so is this one.
 *
 * Usage: node --import tsx bench/event-loop-reader.ts <url> <session id>, with the ticket in
 * GATEHOUSE_BENCH_TICKET. It connects, prints `ready`, waits for a line on stdin, runs the big
 * session's calls in sequence and prints one JSON line: each call's time and when it ran.
 */
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { GatewayClient } from '../src/surfaces/client/rpc-client.js';

export interface ReaderResult {
  took: Record<string, number>;
  spans: { name: string; from: number; to: number }[];
}

const [url, id] = process.argv.slice(2);
const client = await GatewayClient.connect(url!, process.env['GATEHOUSE_BENCH_TICKET']!);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
process.stdout.write('ready\n');
await lines.next();

const result: ReaderResult = { took: {}, spans: [] };
const timed = async (name: string, fn: () => Promise<unknown>) => {
  const start = performance.now();
  const from = Date.now();
  await fn();
  result.spans.push({ name, from, to: Date.now() });
  result.took[`${name}_ms`] = Math.round(performance.now() - start);
};
await timed('resume', () => client.call('session.resume', { session_id: id }));
await timed('history', () => client.call('session.history', { session_id: id }));
await timed('search', () => client.call('session.search', { query: 'module built', limit: 500 }));
await timed('compress', () => client.call('session.compress', { session_id: id }));
await timed('undo', () => client.call('session.undo', { session_id: id, request_id: 'bench-undo' }));
process.stdout.write(`${JSON.stringify(result)}\n`);
await client.close();
process.exit(0);
