#!/usr/bin/env node
/**
 * The longest stretches a .cpuprofile shows its thread's event loop held (issue 32 aim 3):
 * consecutive samples under one entry point (the root's child: one timer, immediate or I/O callback
 * phase), not `(idle)`, make one task, and each task is listed with its length and the functions
 * that took most of its samples (`(program)` and `(garbage collector)` samples join the task
 * around them). Under machine load the event-loop delay the daemon reports includes the time
 * the process was descheduled; the profile's task lengths are the CPU the loop was held for, the
 * honest figure of what the code blocks. Samples are wall-clock spaced, so a descheduled stretch
 * shows as one long gap between two samples: gaps over `--gap` ms are reported apart.
 *
 *   node scripts/long-tasks.mjs DIR_OR_FILE [--top 15] [--min 20] [--gap 10] [--frames REGEX]
 *
 * `--frames` lists, for each task, the time of the frames whose name matches REGEX as well (say
 * `cl100k|prepare|jsonPieces` to see whether a task is the tokenizer, a compression or a reply).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';

const print = (line) => process.stdout.write(`${line}\n`);

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(args[at + 1]);
};
const target = args.find((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
if (!target) {
  process.stderr.write(
    'usage: node scripts/long-tasks.mjs DIR_OR_FILE [--top 15] [--min 20] [--gap 10] [--frames REGEX]\n',
  );
  process.exit(2);
}
const top = option('top', 15);
const minMs = option('min', 20);
/** A sample spaced more than this (ms) from the last stands for the process descheduled, not CPU. */
const gapMs = option('gap', 10);
const framesAt = args.indexOf('--frames');
const frames = framesAt < 0 ? null : new RegExp(args[framesAt + 1]);
const files = statSync(target).isDirectory()
  ? readdirSync(target)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => path.join(target, f))
  : [target];

/** The names that are no JavaScript of the loop's own: where the loop waits. */
const IDLE = new Set(['(idle)']);
const BOOKKEEPING = new Set(['(program)', '(garbage collector)']);

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const label = (id) => {
    const f = nodes.get(id).callFrame;
    const where = f.url ? `${path.basename(f.url)}:${f.lineNumber + 1}` : '';
    return `${f.functionName || '(anonymous)'} ${where}`.trim();
  };
  /** The frames of a sample from the leaf up (the leaf and its callers). */
  const stack = (id) => {
    const frames = [];
    for (let at = id; at !== undefined; at = parent.get(at)) frames.push(at);
    return frames;
  };
  const tasks = [];
  let task = null;
  let time = profile.startTime;
  const close = () => {
    if (task && task.cpu >= minMs * 1000) tasks.push(task);
    task = null;
  };
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    time += delta;
    const id = profile.samples[i];
    const name = nodes.get(id).callFrame.functionName;
    if (IDLE.has(name)) {
      close();
      continue;
    }
    // A sample under another entry point than the task's (the root's child: a timer, an immediate,
    // an I/O callback) begins another macrotask: a loop that never idles still runs one at a time.
    const entry = stack(id).at(-2);
    if (task && !BOOKKEEPING.has(name) && entry !== task.entry) close();
    if (!task)
      task = { start: time, end: time, cpu: 0, self: new Map(), inclusive: new Map(), gaps: 0, entry };
    if (task.entry === undefined || BOOKKEEPING.has(nodes.get(task.entry)?.callFrame.functionName))
      task.entry = entry;
    // The sample stands for the time since the previous one; a long one is the process descheduled,
    // counted apart and not as any frame's CPU.
    const cpu = delta > gapMs * 1000 ? 0 : delta;
    task.gaps += delta - cpu;
    task.cpu += cpu;
    task.end = time;
    if (BOOKKEEPING.has(name)) continue;
    task.self.set(label(id), (task.self.get(label(id)) ?? 0) + cpu);
    for (const frame of new Set(stack(id).map(label)))
      task.inclusive.set(frame, (task.inclusive.get(frame) ?? 0) + cpu);
  }
  close();
  tasks.sort((a, b) => b.cpu - a.cpu);
  print(`${path.basename(file)}: ${tasks.length} tasks holding the loop ${minMs} ms or more`);
  for (const t of tasks.slice(0, top)) {
    const at = ((t.start - profile.startTime) / 1e6).toFixed(1);
    const wall = ((t.end - t.start) / 1000).toFixed(0);
    const heavy = [...t.inclusive]
      .filter(
        ([name]) =>
          !name.startsWith('(root)') &&
          !name.startsWith('processImmediate') &&
          !name.startsWith('processTicksAndRejections') &&
          !name.startsWith('listOnTimeout'),
      )
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([name, us]) => `${name} ${(us / 1000).toFixed(0)}`);
    const self = [...t.self]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([name, us]) => `${name} ${(us / 1000).toFixed(0)}`);
    print(
      `  ${(t.cpu / 1000).toFixed(0)} ms held (${wall} ms wall, ${(t.gaps / 1000).toFixed(0)} ms descheduled) at ${at} s`,
    );
    print(`    inclusive: ${heavy.join(' | ')}`);
    print(`    self: ${self.join(' | ')}`);
    if (frames) {
      const matched = [...t.inclusive]
        .filter(([name]) => frames.test(name))
        .sort((a, b) => b[1] - a[1])
        .slice(0, 6)
        .map(([name, us]) => `${name} ${(us / 1000).toFixed(0)}`);
      if (matched.length > 0) print(`    matching: ${matched.join(' | ')}`);
    }
  }
}
