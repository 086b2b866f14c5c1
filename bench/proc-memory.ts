/**
 * Where a process's resident memory sits (Linux), for the memory benches: /proc/<pid>/smaps summed
 * by kind of mapping. Not itself a bench (the name does not end in .bench.ts).
 */
import { readFileSync } from 'node:fs';

/** Resident KiB of a process by kind of mapping. */
export interface ResidentBreakdown {
  /** Every mapping (VmRSS). */
  totalKiB: number;
  /** `[heap]`: glibc malloc's main heap (the main thread's small blocks, SQLite's page cache among them). */
  mallocHeapKiB: number;
  /** Anonymous mappings: V8's heap spaces, other threads' malloc arenas, blocks malloc mapped on their own. */
  anonKiB: number;
  /** Mappings of files: the node binary, shared libraries, better-sqlite3's addon, the -shm file. */
  fileKiB: number;
}

/** Sums /proc/<pid>/smaps by kind of mapping. */
export function residentBreakdown(pid: number): ResidentBreakdown {
  return parseSmaps(readFileSync(`/proc/${pid}/smaps`, 'utf8'));
}

/** The sums of one smaps text (pure, for the test). */
export function parseSmaps(text: string): ResidentBreakdown {
  const out: ResidentBreakdown = { totalKiB: 0, mallocHeapKiB: 0, anonKiB: 0, fileKiB: 0 };
  let kind: 'heap' | 'anon' | 'file' | 'other' = 'other';
  for (const line of text.split('\n')) {
    // A mapping's header: `start-end perms offset dev inode [path]`.
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (header) {
      const where = header[1]!;
      kind = where === '[heap]' ? 'heap' : where === '' ? 'anon' : where.startsWith('/') ? 'file' : 'other';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const kib = Number(rss[1]);
    out.totalKiB += kib;
    if (kind === 'heap') out.mallocHeapKiB += kib;
    else if (kind === 'anon') out.anonKiB += kib;
    else if (kind === 'file') out.fileKiB += kib;
  }
  return out;
}
