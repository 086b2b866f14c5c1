/**
 * The transport ceiling of the admissions bench: a trivial WebSocket JSON-RPC server that answers
 * every request with its own params. Run as a child process (`node --import tsx bench/echo-server.ts`)
 * so it sits across a process boundary like the daemon does; prints its port on stdout.
 */
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';

const server = new WebSocketServer({
  host: '127.0.0.1',
  port: 0,
  path: '/api/ws',
  handleProtocols: () => 'gatehouse.v1',
});
server.on('connection', (socket) => {
  socket.on('message', (data: Buffer) => {
    const frame = JSON.parse(data.toString('utf8')) as { id: number; params: unknown };
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: frame.id, result: frame.params }));
  });
});
server.on('listening', () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
