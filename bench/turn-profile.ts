/**
 * A CPU profile of the daemon over sequential turns only (issue 32, aim 2), for reading where a
 * turn's time goes: `node --import tsx bench/turn-profile.ts [turns] [out.cpuprofile | -]`. Each turn
 * is the first of a fresh session, as in the overhead figure of gateway-turns; the profile is
 * started after the sessions exist, through the daemon's inspector. Not itself a bench. With `-` as
 * the output no profiler runs, so the daemon's CPU time a turn (from /proc, printed either way) is
 * not inflated by the sampling.
 */
import { writeFileSync, rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import {
  CompletionRouter,
  configFor,
  cpuMs,
  threadCpuMs,
  createSessions,
  startBenchDaemon,
  startChildDemoModel,
  tempDir,
} from './gateway-daemon.js';
import { inspector } from './inspector.js';
import { percentile } from './lib.js';

const turns = Number(process.argv[2] ?? 300);
const out = process.argv[3] ?? 'turns.cpuprofile';
const demo = await startChildDemoModel();
const daemon = await startBenchDaemon(
  configFor({ modelBaseUrl: demo.baseUrl, maxConcurrentTurns: 100 }),
  process.env['GATEHOUSE_PROFILE_PARENT'],
  ['--inspect=127.0.0.1:0'],
);
const cwd = tempDir('gh-bench-cwd-');
// For a profiler attached from outside (`perf record -p`).
process.stderr.write(`daemon pid ${daemon.pid}\n`);
try {
  const viewer = await daemon.connect();
  const router = new CompletionRouter(viewer);
  const ids = await createSessions([viewer], turns + 20, cwd, 4);
  for (const id of ids) await viewer.call('session.resume', { session_id: id });
  const turn = async (i: number) => {
    const receipt = await viewer.call<{ admission_id: string }>('prompt.submit', {
      session_id: ids[i],
      submission_id: `p-${i}`,
      text: 'measure the overhead of one turn through the gateway please',
    });
    await router.completion(receipt.admission_id);
  };
  for (let i = 0; i < 20; i++) await turn(i);
  // `-` as the file: no profile, so the CPU figure is the daemon's own, without the sampler's.
  const devtools = out === '-' ? null : await inspector(daemon);
  await devtools?.send('Profiler.enable');
  await devtools?.send('Profiler.setSamplingInterval', { interval: 100 });
  await devtools?.send('Profiler.start');
  type Storage = { committed_operations: number; log_flushes: number };
  const storage = async () => (await viewer.call<{ storage: Storage }>('runtime.describe', {})).storage;
  const before = await storage();
  const cpuBefore = cpuMs(daemon.pid);
  const threadsBefore = threadCpuMs(daemon.pid);
  const ms: number[] = [];
  for (let i = 20; i < turns + 20; i++) {
    const t = performance.now();
    await turn(i);
    ms.push(performance.now() - t);
  }
  const cpu = cpuMs(daemon.pid) - cpuBefore;
  const threadsAfter = threadCpuMs(daemon.pid);
  const after = await storage();
  if (devtools) {
    const { profile } = (await devtools.send('Profiler.stop')) as { profile: unknown };
    devtools.close();
    writeFileSync(out, JSON.stringify(profile));
  }
  ms.sort((a, b) => a - b);
  process.stdout.write(
    `turns ${turns}: p50 ${percentile(ms, 50).toFixed(2)} ms, p99 ${percentile(ms, 99).toFixed(2)} ms; ` +
      `daemon CPU ${(cpu / turns).toFixed(3)} ms a turn${devtools ? ' (profiler on)' : ''} ` +
      `(main thread ${((threadsAfter.main - threadsBefore.main) / turns).toFixed(3)}, ` +
      `other threads ${((threadsAfter.others - threadsBefore.others) / turns).toFixed(3)}); ` +
      `${((after.log_flushes - before.log_flushes) / turns).toFixed(2)} log flushes and ` +
      `${((after.committed_operations - before.committed_operations) / turns).toFixed(2)} group operations a turn; ` +
      (devtools ? `profile in ${out}\n` : 'no profile\n'),
  );
  await viewer.close();
} finally {
  await daemon.close();
  await demo.close();
  rmSync(cwd, { recursive: true, force: true });
}
