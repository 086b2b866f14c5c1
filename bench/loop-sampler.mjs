/**
 * Loaded into the daemon by bench/event-loop.bench.ts (`--import`): tells what each long event-loop
 * delay was made of (issue 32 aim 3). A timer fires every INTERVAL_MS; when it fires DELAY_MS or more
 * late, the main thread's own scheduler counters (Linux `/proc/thread-self/schedstat`: time on a
 * CPU, time runnable but waiting for one) over that stretch split it into
 *
 * - cpu: the loop's own work (JavaScript, and native code it called: SQLite's statements),
 * - runq: the thread was ready but the machine gave its CPU to another process (load),
 * - other: neither, so the thread slept in the kernel: synchronous I/O (an fsync, a read of a page
 *   not in memory) or a lock, plus at most one interval of the loop's ordinary idle wait.
 *
 * Each delay is one line `epoch_ms late_ms cpu_ms runq_ms other_ms` appended to the file the
 * variable GATEHOUSE_BENCH_LOOP_SAMPLES names (read before the daemon seals its environment), in
 * batches every second and at exit. The cost is one small read of /proc per interval.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { setInterval } from 'node:timers';

const INTERVAL_MS = 5;
const DELAY_MS = 20;
const file = process.env.GATEHOUSE_BENCH_LOOP_SAMPLES;

function sched() {
  const [cpu, runq] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ');
  return { cpu: Number(cpu) / 1e6, runq: Number(runq) / 1e6 };
}

if (file) {
  let lines = [];
  let last = performance.now();
  let counters = sched();
  const flush = () => {
    if (lines.length > 0) appendFileSync(file, lines.join(''));
    lines = [];
  };
  setInterval(() => {
    const now = performance.now();
    const late = now - last - INTERVAL_MS;
    if (late >= DELAY_MS) {
      const next = sched();
      const cpu = next.cpu - counters.cpu;
      const runq = next.runq - counters.runq;
      const other = Math.max(0, now - last - cpu - runq);
      lines.push(
        `${Date.now()} ${late.toFixed(1)} ${cpu.toFixed(1)} ${runq.toFixed(1)} ${other.toFixed(1)}\n`,
      );
      counters = next;
    } else {
      counters = sched();
    }
    last = now;
  }, INTERVAL_MS).unref();
  setInterval(flush, 1000).unref();
  process.on('exit', flush);
}
