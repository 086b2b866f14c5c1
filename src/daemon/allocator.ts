/**
 * The C allocator's settings the daemon is started with (issue 12 item 13, measured by
 * `npm run bench -- soak`).
 *
 * glibc's malloc serves requests under its mmap threshold (128 KiB, and raised up to 32 MiB each
 * time a large block is freed) from the main heap, which returns memory to the system only from
 * its top. The daemon's traffic interleaves short-lived blocks of 64 KiB and more (tool output read
 * from pipes, frames of large events, SQLite rows of large messages) with long-lived small ones
 * (SQLite's page cache): freed large blocks then stay resident, and RSS climbed by about 50% over
 * 10 minutes of soak while the JavaScript heap stayed at about 40 MB. A fixed threshold of 64 KiB
 * (which also turns the dynamic raise off) maps every such block on its own and unmaps it when it
 * is freed. Other C libraries ignore the variable.
 *
 * The environment is the only way to set it before the allocator starts, so `gatehouse start` (and
 * a chat that starts the gateway) spawn `serve` with it; a value the user set wins.
 */
export const MMAP_THRESHOLD_VARIABLE = 'MALLOC_MMAP_THRESHOLD_';
export const MMAP_THRESHOLD_BYTES = 64 * 1024;

/** The environment for a daemon process: `env` plus the allocator's settings it does not set. */
export function daemonEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const tunables = env['GLIBC_TUNABLES'] ?? '';
  if (env[MMAP_THRESHOLD_VARIABLE] !== undefined || tunables.includes('mmap_threshold')) return env;
  return { ...env, [MMAP_THRESHOLD_VARIABLE]: String(MMAP_THRESHOLD_BYTES) };
}
