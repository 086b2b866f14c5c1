import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  exposedGc,
  findCgroupMemory,
  garbageCollector,
  memoryBudget,
  memoryReader,
  parseLimit,
  parseProcCgroup,
  parseRssAnon,
} from '../../../src/daemon/memory.js';

let root: string;
const MiB = 1024 * 1024;

function write(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-cgroup-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const roots = () => ({
  proc: path.join(root, 'proc'),
  cgroup: path.join(root, 'cgroup'),
  totalMemBytes: () => 8192 * MiB,
});

describe('memory budget and anonymous memory (AGC-2)', () => {
  it('cgroup v2: memory.high first, then memory.max; the group’s own anon from memory.stat', () => {
    write(path.join(root, 'proc/self/cgroup'), '0::/system.slice/gatehouse.service\n');
    write(path.join(root, 'proc/self/status'), 'Name:\tnode\nRssAnon:\t   2048 kB\n');
    const dir = path.join(root, 'cgroup/system.slice/gatehouse.service');
    write(path.join(dir, 'memory.stat'), 'anon 314572800\nfile 1000\n');
    write(path.join(dir, 'memory.max'), `${1024 * MiB}\n`);
    write(path.join(dir, 'memory.high'), 'max\n');
    expect(findCgroupMemory(roots())).toEqual({
      version: 2,
      dir,
      limitBytes: 1024 * MiB,
      anonBytes: 314572800,
    });
    write(path.join(dir, 'memory.high'), `${768 * MiB}\n`);
    expect(memoryBudget('auto', roots())).toBe(768 * MiB);
    expect(memoryReader('auto', roots())()).toEqual({ anonBytes: 314572800, budgetBytes: 768 * MiB });
    // A fixed number wins over the cgroup; the usage is still the group's.
    expect(memoryReader(512, roots())()).toEqual({ anonBytes: 314572800, budgetBytes: 512 * MiB });
  });

  it('cgroup v1: memory.limit_in_bytes and total_rss; a huge limit means none', () => {
    write(path.join(root, 'proc/self/cgroup'), '4:memory:/process_api/abc\n1:cpu:/\n0::/\n');
    write(path.join(root, 'proc/self/status'), 'RssAnon:\t   4096 kB\n');
    const dir = path.join(root, 'cgroup/memory/process_api/abc');
    write(path.join(dir, 'memory.stat'), 'cache 1\nrss 1000\ntotal_rss 2000\n');
    write(path.join(dir, 'memory.limit_in_bytes'), '9223372036854771712\n');
    expect(findCgroupMemory(roots())).toBeNull();
    // No limit anywhere: the machine's RAM is the budget, and the process's own RssAnon the usage.
    expect(memoryReader('auto', roots())()).toEqual({ anonBytes: 4096 * 1024, budgetBytes: 8192 * MiB });
    write(path.join(dir, 'memory.limit_in_bytes'), `${256 * MiB}\n`);
    expect(memoryReader('auto', roots())()).toEqual({ anonBytes: 2000, budgetBytes: 256 * MiB });
  });

  it('a namespaced cgroup that shows itself as / is read at the root', () => {
    write(path.join(root, 'proc/self/cgroup'), '0::/\n');
    write(path.join(root, 'cgroup/memory.stat'), 'anon 42\n');
    write(path.join(root, 'cgroup/memory.max'), `${64 * MiB}\n`);
    expect(findCgroupMemory(roots())?.anonBytes).toBe(42);
  });

  it('0 and off disable the pressure sweep', () => {
    expect(memoryBudget('off', roots())).toBeNull();
    expect(memoryBudget(0, roots())).toBeNull();
    expect(memoryReader('off', roots())().budgetBytes).toBeNull();
  });

  it('parsers', () => {
    expect(parseLimit('max\n')).toBeNull();
    expect(parseLimit('1234\n')).toBe(1234);
    expect(parseLimit(null)).toBeNull();
    expect(parseRssAnon('RssAnon:\t 10 kB\n')).toBe(10240);
    expect(parseProcCgroup('12:memory,foo:/a:b\n0::/x\n')).toEqual({ v2: '/x', v1Memory: '/a:b' });
  });
});

describe('the collection after a pressure eviction', () => {
  it('is rate-limited to a share of the time: at 0.25 the next of a 20 ms collection waits until 80 ms after its start', () => {
    let clock = 0;
    let collected = 0;
    const collect = garbageCollector({
      timeShare: 0.25,
      now: () => clock,
      collect: () => {
        collected++;
        clock += 20;
      },
    });
    expect(collect()).toBe(true);
    expect(clock).toBe(20);
    clock = 79;
    expect(collect()).toBe(false);
    clock = 80;
    expect(collect()).toBe(true);
    expect(collected).toBe(2);
  });

  it("exposedGc collects what nothing references any more (Node's own gc, flag set at run time)", async () => {
    const gc = exposedGc();
    // Made in a function of its own, so nothing here keeps the object alive.
    const ref = ((): WeakRef<{ payload: string }> => new WeakRef({ payload: 'x'.repeat(1_000_000) }))();
    // A WeakRef's target is kept until the job that created it ended.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(ref.deref()).toBeUndefined();
  });
});
