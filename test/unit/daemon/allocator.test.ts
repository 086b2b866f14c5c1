import { describe, expect, it } from 'vitest';
import {
  ALLOCATOR_VARIABLES,
  daemonEnvironment,
  holdOptimisingTiers,
  keepYoungGenerationSmall,
  releaseOptimisingTiers,
} from '../../../src/daemon/allocator.js';
import { keptInDaemon } from '../../../src/daemon/seal-environment.js';

describe('daemonEnvironment', () => {
  it('adds the fixed mmap and trim thresholds, keeping the rest of the environment', () => {
    expect(daemonEnvironment({ PATH: '/bin' })).toEqual({
      PATH: '/bin',
      MALLOC_MMAP_THRESHOLD_: '262144',
      MALLOC_TRIM_THRESHOLD_: '4194304',
    });
  });

  it('leaves each threshold the user chose alone, set directly or through GLIBC_TUNABLES', () => {
    expect(daemonEnvironment({ MALLOC_MMAP_THRESHOLD_: '1048576' })).toEqual({
      MALLOC_MMAP_THRESHOLD_: '1048576',
      MALLOC_TRIM_THRESHOLD_: '4194304',
    });
    expect(daemonEnvironment({ MALLOC_TRIM_THRESHOLD_: '0' })).toEqual({
      MALLOC_MMAP_THRESHOLD_: '262144',
      MALLOC_TRIM_THRESHOLD_: '0',
    });
    const tunables = {
      GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=65536:glibc.malloc.trim_threshold=131072',
    };
    expect(daemonEnvironment(tunables)).toEqual(tunables);
    expect(daemonEnvironment({ GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=65536' })).toEqual({
      GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=65536',
      MALLOC_TRIM_THRESHOLD_: '4194304',
    });
  });
});

describe("the daemon's sealed environment", () => {
  it("keeps the allocator's settings, so /proc/<pid>/environ shows what the daemon runs with", () => {
    expect(ALLOCATOR_VARIABLES).toEqual(['MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_']);
    for (const name of ALLOCATOR_VARIABLES) expect(keptInDaemon(name)).toBe(true);
  });
});

describe('keepYoungGenerationSmall', () => {
  it("leaves a young generation size the process was given alone (its flags or NODE_OPTIONS')", () => {
    expect(keepYoungGenerationSmall(['--max-semi-space-size=4'])).toBe(false);
    expect(keepYoungGenerationSmall(['--semi-space-growth-factor=2'])).toBe(false);
  });

  it('otherwise stops the young generation from growing', () => {
    expect(keepYoungGenerationSmall([])).toBe(process.env['NODE_OPTIONS']?.includes('semi-space') !== true);
  });
});

describe('holdOptimisingTiers', () => {
  it("leaves the tiers alone when the process was given a flag about them (its own or NODE_OPTIONS')", () => {
    for (const flag of ['--no-opt', '--max-opt=2', '--jitless', '--sparkplug', '--turbofan']) {
      expect(holdOptimisingTiers([flag])).toBe(false);
    }
  });

  it('holds them once until released, then may hold them again', () => {
    const expected = !/--(no-)?(opt|turbofan|sparkplug)|--max-opt|--jitless/.test(
      process.env['NODE_OPTIONS'] ?? '',
    );
    try {
      expect(holdOptimisingTiers([])).toBe(expected);
      expect(holdOptimisingTiers([])).toBe(false);
    } finally {
      releaseOptimisingTiers();
    }
    releaseOptimisingTiers();
    try {
      expect(holdOptimisingTiers([], 'riscv64')).toBe(expected);
    } finally {
      releaseOptimisingTiers();
    }
  });
});
