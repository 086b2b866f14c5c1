/**
 * The daemon's own environment, sealed at `serve` start (docs/tool-reach.md). Secrets reach the
 * daemon through its environment (provider keys, bot tokens, the PostgreSQL URL), and a child of
 * the daemon can read that environment as it was at exec through `/proc/<daemon pid>/environ`:
 * the kernel shows the initial environ block, whatever `delete process.env.X` did since.
 *
 * So the daemon reads its environment once into memory (the copy its services use), removes every
 * name but the harmless ones from the live environment, moves the survivors' strings to the heap
 * (setenv copies them), then overwrites the initial block in place through /proc/self/mem (located
 * by the env_start/env_end fields of /proc/self/stat) with the survivors only.
 */
import fs from 'node:fs';
import { isAllowedName } from '../runtime/tools/env.js';
import { ALLOCATOR_VARIABLES } from './allocator.js';

/**
 * The gateway's own settings that are not secrets: read from process.env later, or (the allocator's,
 * allocator.ts) shown in /proc/<pid>/environ as what the daemon was started with.
 */
const OWN_SETTINGS = new Set([
  'GATEHOUSE_HOME',
  'GATEHOUSE_DEBUG',
  'GATEHOUSE_TEST_FAULTS',
  'GATEHOUSE_TEST_MAX_PAGE_COUNT',
  'GATEHOUSE_TEST_CLOCK',
  ...ALLOCATOR_VARIABLES,
  'GLIBC_TUNABLES',
]);

export function keptInDaemon(name: string): boolean {
  return isAllowedName(name) || OWN_SETTINGS.has(name);
}

export type SealOutcome = { sealed: true } | { sealed: false; reason: string };

/**
 * Returns the full environment as it was (for the services) and what became of the initial block.
 * Afterwards process.env and /proc/self/environ hold only the names keptInDaemon() allows.
 */
export function sealEnvironment(): { env: Record<string, string>; outcome: SealOutcome } {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value;
  for (const name of Object.keys(process.env)) {
    if (!keptInDaemon(name)) delete process.env[name];
    // setenv() copies the string to the heap: the initial block no longer backs it.
    else process.env[name] = env[name]!;
  }
  return { env, outcome: overwriteInitialBlock(env) };
}

function overwriteInitialBlock(env: Record<string, string>): SealOutcome {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name, which may itself hold spaces and parentheses; field 3 first.
    const fields = stat
      .slice(stat.lastIndexOf(')') + 2)
      .trim()
      .split(' ');
    const start = Number(fields[50 - 3]);
    const end = Number(fields[51 - 3]);
    if (!(start > 0 && end > start))
      return { sealed: false, reason: 'no env_start/env_end in /proc/self/stat' };
    const block = Buffer.alloc(end - start);
    const kept = Object.entries(env)
      .filter(([name]) => keptInDaemon(name))
      .map(([name, value]) => `${name}=${value}\0`)
      .join('');
    block.write(kept.length <= block.length ? kept : '', 'utf8');
    const fd = fs.openSync('/proc/self/mem', 'r+');
    try {
      fs.writeSync(fd, block, 0, block.length, start);
    } finally {
      fs.closeSync(fd);
    }
    const after = fs.readFileSync('/proc/self/environ', 'latin1');
    const left = after
      .split('\0')
      .map((entry) => entry.slice(0, entry.indexOf('=')))
      .filter((name) => name !== '' && !keptInDaemon(name));
    return left.length === 0
      ? { sealed: true }
      : { sealed: false, reason: 'the block still holds other names' };
  } catch (error) {
    return { sealed: false, reason: (error as NodeJS.ErrnoException).code ?? String(error) };
  }
}
