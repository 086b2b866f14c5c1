#!/usr/bin/env node
/**
 * Where a .cpuprofile's busy time went (issue 32 aim 2): the share of the thread's non-idle samples
 * each function took itself (self time: `writev`, `run` of a SQLite statement, the garbage
 * collector…), and each function with everything it called (inclusive, counted once per sample
 * however often the function recurs). Shares are of the busy samples, so a profile of a loaded
 * machine and one of a quiet machine can be read side by side. Native frames (a syscall, a
 * statement) show without a file.
 *
 *   node scripts/profile-summary.mjs FILE [--top 25] [--match REGEX]
 *
 * `--match` keeps only the rows whose name matches REGEX (say `gatehouse|undici`).
 */
import { readFileSync } from 'node:fs';
import process from 'node:process';

const print = (line) => process.stdout.write(`${line}\n`);

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at < 0 ? fallback : args[at + 1];
};
const file = args.find((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
if (!file) {
  process.stderr.write('usage: node scripts/profile-summary.mjs FILE [--top 25] [--match REGEX]\n');
  process.exit(2);
}
const top = Number(option('top', 25));
const match = new RegExp(option('match', ''));

const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);

/** A frame's name: its function and where it is (the file's last two parts and the line). */
const nameOf = (node) => {
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url ? ` ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}` : '';
  return `${functionName || '(anonymous)'}${where}`;
};

const self = new Map();
const inclusive = new Map();
let busy = 0;
let idle = 0;
profile.samples.forEach((id, i) => {
  const micros = profile.timeDeltas[i] ?? 0;
  const leaf = nodes.get(id);
  if (leaf.callFrame.functionName === '(idle)') {
    idle += micros;
    return;
  }
  busy += micros;
  self.set(nameOf(leaf), (self.get(nameOf(leaf)) ?? 0) + micros);
  const seen = new Set();
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const name = nameOf(nodes.get(at));
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + micros);
  }
});

const share = (micros) => `${((micros / busy) * 100).toFixed(1).padStart(5)}%`;
const rows = (map) =>
  [...map]
    .filter(([name]) => match.test(name) && name !== '(root)')
    .sort((a, b) => b[1] - a[1])
    .slice(0, top);

print(
  `busy ${(busy / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms (shares below are of busy time)`,
);
print('\nself time');
for (const [name, micros] of rows(self)) print(`${share(micros)}  ${name}`);
print('\nwith what they called');
for (const [name, micros] of rows(inclusive)) print(`${share(micros)}  ${name}`);
