/**
 * `npm run torture -- --iterations N --seed S`: kills the real daemon N times (at random moments and
 * at every fault point), then checks that nothing acknowledged was lost or run twice. Exits 1 on any
 * violation, naming the seed that replays the run; exits 2, saying what to change, on a bad option
 * (an unknown one, a value that is not a whole number in range, or an option of the other mode).
 */
import { parseArgs } from 'node:util';
import type { FaultPoint } from '../src/daemon/faults.js';

function refuse(message: string): never {
  process.stderr.write(`torture: ${message}\n`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    options: {
      iterations: { type: 'string', default: '20' },
      seed: { type: 'string' },
      clients: { type: 'string', default: '3' },
      keep: { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
      // e.g. --faults compress.summarised,compress.transaction: arm only these points.
      faults: { type: 'string' },
      /** One daemon only: its `recovery.max_resumes`; 1 = every started turn unknown (no step resume). */
      'max-resumes': { type: 'string' },
      /** Cluster mode: this many daemons on one PostgreSQL schema (SCL-1), e.g. --cluster 3. */
      cluster: { type: 'string' },
      /** Cluster mode only: stop starting iterations after this many minutes, then drain and check. */
      minutes: { type: 'string' },
      /** Cluster mode only: `cluster.lease_s` of every instance (default 2). */
      'lease-s': { type: 'string' },
      /** Cluster mode only: this many per-minute scheduled jobs on the test clock (default 0). */
      jobs: { type: 'string' },
    },
  });
} catch (error) {
  refuse(`${(error as Error).message}; see docs/crash-safety.md, "The torture harness"`);
}
const { values } = parsed;

/** A whole number in [min, max] given as --name, or a clear refusal. */
function whole(name: string, text: string, min: number, max?: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || (max !== undefined && n > max))
    refuse(
      `--${name} must be a whole number ${max === undefined ? `of at least ${min}` : `from ${min} to ${max}`}, not "${text}"`,
    );
  return n;
}

const iterations = whole('iterations', values.iterations, 1);
const clients = whole('clients', values.clients, 1, 64);
const seed =
  values.seed === undefined
    ? Math.floor(Math.random() * 2 ** 31)
    : whole('seed', values.seed, 0, 2 ** 31 - 1);
const faults = values.faults?.split(',').map((f) => f.trim()) as FaultPoint[] | undefined;
if (faults !== undefined) {
  const { FAULT_POINTS } = await import('../src/daemon/faults.js');
  for (const f of faults)
    if (!FAULT_POINTS.includes(f)) refuse(`unknown fault point "${f}"; known: ${FAULT_POINTS.join(', ')}`);
}
const clusterOnly = (['minutes', 'lease-s', 'jobs'] as const).filter((k) => values[k] !== undefined);
if (values.cluster === undefined && clusterOnly.length > 0)
  refuse(`--${clusterOnly[0]} applies to the cluster mode only: add --cluster N (e.g. --cluster 3)`);
if (values.cluster !== undefined && values['max-resumes'] !== undefined)
  refuse('--max-resumes applies to one daemon only, not to --cluster');
const instances = values.cluster === undefined ? undefined : whole('cluster', values.cluster, 1, 16);
// The ranges of the daemon's own `cluster.lease_s` and `recovery.max_resumes`.
const leaseS = whole('lease-s', values['lease-s'] ?? '2', 2, 300);
const minutes = values.minutes === undefined ? undefined : whole('minutes', values.minutes, 1);
const jobs = values.jobs === undefined ? undefined : whole('jobs', values.jobs, 0, 100);
const maxResumes =
  values['max-resumes'] === undefined ? undefined : whole('max-resumes', values['max-resumes'], 1, 100);

process.stderr.write(`torture: ${iterations} iterations, seed ${seed}\n`);
const log = values.quiet ? undefined : (line: string) => process.stderr.write(`${line}\n`);
// The harnesses are loaded once the options are checked: a refusal answers without compiling them
// and the store and client code they import (most of a refusal's CPU, and `npm test` runs ten).
const summary =
  instances !== undefined
    ? await (
        await import('./torture/cluster.js')
      ).runClusterTorture({
        iterations,
        seed,
        instances,
        leaseS,
        ...(minutes === undefined ? {} : { minutes }),
        ...(jobs === undefined ? {} : { jobs }),
        clients,
        keep: values.keep,
        ...(faults ? { faults } : {}),
        log,
      })
    : await (
        await import('./torture/harness.js')
      ).runTorture({
        iterations,
        seed,
        clients,
        keep: values.keep,
        ...(faults ? { faults } : {}),
        ...(maxResumes === undefined ? {} : { maxResumes }),
        log,
      });
const { violations, ...figures } = summary;
process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
if (violations.length > 0) {
  process.stderr.write(`\n${violations.length} violation(s); replay with --seed ${seed}:\n`);
  for (const v of violations.slice(0, 50)) process.stderr.write(`  - ${v}\n`);
  process.exit(1);
}
process.stderr.write(`ok: lost ${summary.lost}, duplicated ${summary.duplicated}\n`);
