/**
 * A real small filesystem for the full-disk tests (issue 26 item 5): a tmpfs with a size limit,
 * filled to the last page and emptied again. Mounting needs root; `canMount` says whether the
 * tests can run here.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const canMount = process.getuid?.() === 0;

const mounts: string[] = [];

/** A fresh tmpfs of `size` (as mount spells it: `24m`); unmounted by unmountSmallDisks(). */
export function mountSmallDisk(size: string): string {
  const disk = mkdtempSync(join(tmpdir(), 'gh-small-disk-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', disk]);
  mounts.push(disk);
  return disk;
}

export function unmountSmallDisks(): void {
  for (const dir of mounts.splice(0)) {
    execFileSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Fills the filesystem at `dir` to the last 4 KiB page; returns the filler's path (rmSync it to free). */
export function fillDisk(dir: string): string {
  const filler = join(dir, 'filler');
  for (const size of [64 * 1024, 4096]) {
    const chunk = Buffer.alloc(size, 1);
    try {
      for (;;) writeFileSync(filler, chunk, { flag: 'a' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
    }
  }
  return filler;
}
