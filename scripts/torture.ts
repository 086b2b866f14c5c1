/**
 * `npm run torture -- --iterations N --seed S`: kills the real daemon N times (at random moments and
 * at every fault point), then checks that nothing acknowledged was lost or run twice. Exits 1 on any
 * violation, naming the seed that replays the run.
 */
import { parseArgs } from 'node:util';
import { FAULT_POINTS, type FaultPoint } from '../src/daemon/faults.js';
import { runClusterTorture } from './torture/cluster.js';
import { runTorture } from './torture/harness.js';

const { values } = parseArgs({
  options: {
    iterations: { type: 'string', default: '20' },
    seed: { type: 'string' },
    clients: { type: 'string', default: '3' },
    keep: { type: 'boolean', default: false },
    quiet: { type: 'boolean', default: false },
    // e.g. --faults compress.summarised,compress.transaction: arm only these points.
    faults: { type: 'string' },
    /** `recovery.max_resumes` for the daemon; 1 = every started turn unknown (no step resume). */
    'max-resumes': { type: 'string' },
    /** Cluster mode: this many daemons on one PostgreSQL schema (issue 14), e.g. --cluster 3. */
    cluster: { type: 'string' },
    /** Cluster mode: stop starting iterations after this many minutes, then drain and check. */
    minutes: { type: 'string' },
    /** `cluster.lease_s` of every instance in cluster mode. */
    'lease-s': { type: 'string', default: '2' },
  },
});
const faults = values.faults?.split(',').map((f) => f.trim()) as FaultPoint[] | undefined;
for (const f of faults ?? [])
  if (!FAULT_POINTS.includes(f)) {
    process.stderr.write(`torture: unknown fault point "${f}"; known: ${FAULT_POINTS.join(', ')}\n`);
    process.exit(2);
  }
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const iterations = Number(values.iterations);
process.stderr.write(`torture: ${iterations} iterations, seed ${seed}\n`);
const log = values.quiet ? undefined : (line: string) => process.stderr.write(`${line}\n`);
const summary = values.cluster
  ? await runClusterTorture({
      iterations,
      seed,
      instances: Number(values.cluster),
      leaseS: Number(values['lease-s']),
      ...(values.minutes === undefined ? {} : { minutes: Number(values.minutes) }),
      clients: Number(values.clients),
      keep: values.keep,
      ...(faults ? { faults } : {}),
      log,
    })
  : await runTorture({
      iterations,
      seed,
      clients: Number(values.clients),
      keep: values.keep,
      ...(faults ? { faults } : {}),
      ...(values['max-resumes'] === undefined ? {} : { maxResumes: Number(values['max-resumes']) }),
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
