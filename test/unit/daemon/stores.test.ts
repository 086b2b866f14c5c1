import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/daemon/config.js';
import { createLogger } from '../../../src/daemon/logger.js';
import { openGatewayStores } from '../../../src/daemon/services/stores.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'gh-stores-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function cacheSizeWith(yaml: string): Promise<unknown> {
  const { config } = parseConfig(yaml, path.join(dir, 'config.yaml'));
  const stores = await openGatewayStores({
    config,
    env: {},
    stateDb: path.join(dir, 'state.db'),
    instanceId: 'stores-test',
    faults: null,
    logger: createLogger({ file: path.join(dir, 'gateway.log') }),
  });
  try {
    if (!(stores.sessions instanceof SqliteSessionStore)) throw new Error('expected the SQLite store');
    return stores.sessions.db.pragma('cache_size', { simple: true });
  } finally {
    await stores.close();
  }
}

describe('store.sqlite_cache_mb bounds the daemon page cache', () => {
  it('is 64 MiB when absent and the configured MiB when set (negative: KiB, not pages)', async () => {
    expect(await cacheSizeWith('')).toBe(-64 * 1024);
    expect(await cacheSizeWith('store:\n  sqlite_cache_mb: 8\n')).toBe(-8 * 1024);
  });
});
