/**
 * Whether the process was started with one of V8's `flags` (on its command line or in
 * NODE_OPTIONS, as `--flag` or `--flag=value`): a flag the process chose itself is never overridden
 * from within (daemon/allocator.ts, runtime/approvals/bash-tree.ts).
 */
import process from 'node:process';

export function processChoseFlag(
  flags: readonly string[],
  execArgv: readonly string[] = process.execArgv,
): boolean {
  return [...execArgv, ...(process.env['NODE_OPTIONS'] ?? '').split(/\s+/)].some((arg) =>
    flags.some((flag) => arg === flag || arg.startsWith(`${flag}=`)),
  );
}
