/**
 * Creating folders one level at a time. Node's `mkdirSync(dir, { recursive: true })` loops forever
 * (at full CPU) when the kernel answers ENOENT for a folder whose parent exists — as /proc does for
 * `GATEHOUSE_HOME=/proc/nope` — because it takes ENOENT to mean "make the parent first". Making each
 * missing level itself turns that into one clear error.
 */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export function makeDirs(dir: string, mode: number): void {
  const missing: string[] = [];
  for (let at = resolve(dir); !existsSync(at); at = dirname(at)) {
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  for (const level of missing) {
    try {
      mkdirSync(level, { mode });
    } catch (error) {
      // Another process made it meanwhile: fine, as long as it is a folder.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(level).isDirectory()) throw error;
    }
  }
}
