/**
 * `npm run bench [-- --quick] [-- name …]`: runs the benchmarks in bench/*.bench.ts, prints a
 * readable table on stderr and the figures as JSON on stdout. A bench marked `onlyWhenNamed` (the
 * soak) runs only when named, with `--minutes N` for its length: `npm run bench -- soak --minutes 30`.
 */
import { readdirSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';
import { table, type Bench, type BenchFigure } from './lib.js';
import { parseBenchArgs, runsBench, type BenchArgs } from './select.js';

const dir = path.dirname(fileURLToPath(import.meta.url));
let parsed: BenchArgs;
try {
  parsed = parseBenchArgs(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`);
  process.exit(2);
}
const { quick, minutes, only } = parsed;

const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => runsBench(f, only))
  .sort();

const figures: BenchFigure[] = [];
for (const file of files) {
  const mod = (await import(pathToFileURL(path.join(dir, file)).href)) as { default: Bench };
  if (!runsBench(file, only, mod.default.onlyWhenNamed)) continue;
  process.stderr.write(`running ${mod.default.name}…\n`);
  figures.push(...(await mod.default.run({ quick, ...(minutes === undefined ? {} : { minutes }) })));
}

const machine = {
  node: process.version,
  cpus: `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'unknown'}`,
  memory_gib: Math.round(os.totalmem() / 2 ** 30),
  platform: `${os.platform()} ${os.release()}`,
  date: new Date().toISOString(),
};
process.stderr.write(`\n${table(figures)}\n`);
process.stdout.write(`${JSON.stringify({ machine, figures }, null, 2)}\n`);
