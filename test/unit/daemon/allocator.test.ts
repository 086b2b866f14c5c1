import { describe, expect, it } from 'vitest';
import { daemonEnvironment, keepYoungGenerationSmall } from '../../../src/daemon/allocator.js';

describe('daemonEnvironment', () => {
  it('adds the fixed mmap threshold, keeping the rest of the environment', () => {
    expect(daemonEnvironment({ PATH: '/bin' })).toEqual({ PATH: '/bin', MALLOC_MMAP_THRESHOLD_: '65536' });
  });

  it('leaves a threshold the user chose alone, set directly or through GLIBC_TUNABLES', () => {
    expect(daemonEnvironment({ MALLOC_MMAP_THRESHOLD_: '1048576' })).toEqual({
      MALLOC_MMAP_THRESHOLD_: '1048576',
    });
    const tunables = { GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=262144' };
    expect(daemonEnvironment(tunables)).toEqual(tunables);
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
