/**
 * The C allocator's settings the daemon is started with (issue 12 item 13, measured by
 * `npm run bench -- soak`; issue 32, measured by `bench/turn-profile.ts`).
 *
 * glibc's malloc serves requests under its mmap threshold (128 KiB, and raised up to 32 MiB each
 * time a large block is freed) from the main heap, which returns memory to the system only from
 * its top. The daemon's traffic interleaves short-lived large blocks (tool output read from pipes,
 * frames of large events, SQLite rows of large messages) with long-lived small ones (SQLite's page
 * cache): with the dynamic threshold, freed blocks of up to 32 MiB stayed resident, and RSS climbed
 * by about 50% over 10 minutes of soak while the JavaScript heap stayed at about 40 MB. A fixed
 * threshold turns the dynamic raise off, so blocks above it are mapped on their own and unmapped
 * when freed.
 *
 * The threshold is 256 KiB, not the 64 KiB first chosen: at 64 KiB every socket read's 64 KiB
 * buffer and every SQLite page-cache bulk (88 KiB) was an mmap, page faults and an munmap, whose
 * TLB shoot-downs across the daemon's threads were the largest part of a turn's CPU. Fixing the
 * threshold also fixes the trim threshold at its default of 128 KiB, so the heap's top was handed
 * back (brk, or madvise in the threads' arenas) and faulted in again many times a turn; 4 MiB of
 * free top may stay per arena instead. Both keep RSS bounded in the soak (docs/benchmarks.md, "The
 * allocator's thresholds and a turn's CPU"). Other C libraries ignore the variables.
 *
 * The environment is the only way to set them before the allocator starts, so `gatehouse start`
 * (and a chat that starts the gateway) spawn `serve` with them; a value the user set wins, each
 * setting on its own.
 */
import v8 from 'node:v8';
import { processChoseFlag } from '../runtime/v8-flags.js';

export const MMAP_THRESHOLD_VARIABLE = 'MALLOC_MMAP_THRESHOLD_';
export const MMAP_THRESHOLD_BYTES = 256 * 1024;
export const TRIM_THRESHOLD_VARIABLE = 'MALLOC_TRIM_THRESHOLD_';
export const TRIM_THRESHOLD_BYTES = 4 * 1024 * 1024;

/** Each setting: its variable, its name in GLIBC_TUNABLES (`glibc.malloc.<name>`), its value. */
const ALLOCATOR_SETTINGS = [
  { variable: MMAP_THRESHOLD_VARIABLE, tunable: 'mmap_threshold', bytes: MMAP_THRESHOLD_BYTES },
  { variable: TRIM_THRESHOLD_VARIABLE, tunable: 'trim_threshold', bytes: TRIM_THRESHOLD_BYTES },
] as const;

/** The allocator's variables, which the daemon keeps in its sealed environment (seal-environment.ts). */
export const ALLOCATOR_VARIABLES: readonly string[] = ALLOCATOR_SETTINGS.map((s) => s.variable);

/** The environment for a daemon process: `env` plus the allocator's settings it does not set. */
export function daemonEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const tunables = env['GLIBC_TUNABLES'] ?? '';
  const added: NodeJS.ProcessEnv = {};
  for (const { variable, tunable, bytes } of ALLOCATOR_SETTINGS) {
    if (env[variable] === undefined && !tunables.includes(tunable)) added[variable] = String(bytes);
  }
  return Object.keys(added).length === 0 ? env : { ...env, ...added };
}

/**
 * How far V8's young generation may grow, as a factor per growth step: 1 keeps it at its initial
 * size (two semi-spaces of 1 MiB on 64-bit), measured by `npm run bench -- startup` (issue 32).
 *
 * V8 doubles the young generation each time a scavenge finds most of it alive, up to 16 MiB. Loading
 * the daemon's modules does exactly that, so an idle daemon held about 14 MiB of young generation
 * that nothing used again, and V8 gives it back only after a collection at a low allocation rate,
 * which an idle daemon does not run. The daemon's own allocations are short-lived (a turn's request
 * and events), so a small young generation costs a scavenge every MiB of them, about a millisecond,
 * and nothing that survives is lost: it is promoted as before.
 *
 * The factor is read by V8 each time it grows the space, so setting it at the start of `serve`
 * (before the daemon's modules load) works for a foreground `serve` as well as for `gatehouse
 * start`, with no flag on the command line or in NODE_OPTIONS, which the daemon's own child
 * processes (a tool's `node`) would inherit. A process that sets the factor itself keeps its own.
 */
export const YOUNG_GENERATION_GROWTH_FLAG = '--semi-space-growth-factor';

export function keepYoungGenerationSmall(execArgv: readonly string[] = process.execArgv): boolean {
  if (processChoseFlag([YOUNG_GENERATION_GROWTH_FLAG, '--max-semi-space-size'], execArgv)) return false;
  v8.setFlagsFromString(`${YOUNG_GENERATION_GROWTH_FLAG}=1`);
  return true;
}

/**
 * V8's optimising tiers, held back while the daemon starts (issue 32 aim 1, issue 33's start cost):
 * TurboFan (`--opt`) and, where it is on by default, Sparkplug's baseline code (`--sparkplug`).
 *
 * Start-up runs almost every function once (the config's schemas, the migrations, each service's
 * construction), yet some of it runs often enough for V8 to compile optimised code for it, on a
 * background thread, for code that never runs again. That work cost about 7% of a start's CPU,
 * and the compilers' own code, which a daemon that has only started never needs again, was about 4
 * MiB of an idle daemon's resident memory (measured by `npm run bench -- startup`). The tiers are
 * given back once the daemon is ready, so a turn's code is optimised as before. Like the young
 * generation's factor, the flags are read by V8 each time it decides, so they can be set from
 * within `serve`; a process given any of them on its command line or in NODE_OPTIONS keeps its own.
 */
const OPTIMISING_TIER_FLAGS = [
  '--opt',
  '--no-opt',
  '--turbofan',
  '--no-turbofan',
  '--max-opt',
  '--sparkplug',
  '--no-sparkplug',
  '--always-sparkplug',
  '--jitless',
];

/** Sparkplug is compiled in, and on by default, only on these architectures. */
const SPARKPLUG_ARCHES = ['x64', 'arm64'];

let heldTiers: string[] = [];

/** Turns the optimising tiers off until `releaseOptimisingTiers`; false when the process chose its own. */
export function holdOptimisingTiers(
  execArgv: readonly string[] = process.execArgv,
  arch: string = process.arch,
): boolean {
  if (processChoseFlag(OPTIMISING_TIER_FLAGS, execArgv) || heldTiers.length > 0) return false;
  heldTiers = SPARKPLUG_ARCHES.includes(arch) ? ['opt', 'sparkplug'] : ['opt'];
  for (const tier of heldTiers) v8.setFlagsFromString(`--no-${tier}`);
  return true;
}

/** Gives back the tiers `holdOptimisingTiers` held (once the daemon is ready); idempotent. */
export function releaseOptimisingTiers(): void {
  for (const tier of heldTiers.splice(0)) v8.setFlagsFromString(`--${tier}`);
}
