/**
 * Where a home's control socket lives. A Unix socket path is limited to 107 bytes (sun_path is
 * 108 with its NUL), and binding a longer one fails with a misleading error. So the socket is
 * `<home>/gateway.sock` whenever that fits, and otherwise `/tmp/gatehouse-<uid>/<hash>.sock`: a
 * short path in an owner-only folder, keyed by a hash of the home so that each home keeps its own
 * socket and the CLI finds it without asking anyone. The control server creates and verifies that
 * folder (owned by us, mode 0700, not a symlink) before it binds.
 */
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const MAX_SOCKET_PATH_BYTES = 107;

export function controlSocketPath(root: string): string {
  const inHome = join(root, 'gateway.sock');
  if (Buffer.byteLength(inHome) <= MAX_SOCKET_PATH_BYTES) return inHome;
  // A fixed base, not $TMPDIR or $XDG_RUNTIME_DIR: a CLI started from another environment (cron,
  // ssh) must find the same socket as the daemon.
  const base = process.platform === 'linux' ? '/tmp' : tmpdir();
  const owner = process.getuid?.() ?? 'user';
  const key = createHash('sha256').update(root).digest('hex').slice(0, 16);
  return join(base, `gatehouse-${owner}`, `${key}.sock`);
}
