/**
 * A port for a listener a test must name before it starts (a config that takes a fixed port), which
 * no other test can be given meanwhile. A port found free with `listen(0)` and released comes from
 * the kernel's ephemeral range, the range every `listen(0)` and every outgoing connection of the
 * files running side by side draw from: one of them may take it before the listener binds it (a
 * gate run found another daemon answering on a port a test had asserted nobody listened on). So
 * the port is chosen below that range, where nothing is handed out, and checked free.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';

const FLOOR = 20_000;

/** The first port of the kernel's ephemeral range (32768 when it cannot be read). */
function ephemeralStart(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > FLOOR + 1000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A free port on 127.0.0.1 outside the ephemeral range: no `listen(0)` elsewhere can be given it. */
export async function unhandedPort(): Promise<number> {
  const end = ephemeralStart();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = FLOOR + Math.floor(Math.random() * (end - FLOOR));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port found in ${FLOOR}-${end - 1}`);
}
