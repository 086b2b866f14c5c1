import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/storage/sqlite/database.js';
import { buildPlainJs } from '../../shared/plain-js.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-crash-'));
let js: ReturnType<typeof buildPlainJs>;
let writer: string;
beforeAll(() => {
  js = buildPlainJs();
  writer = js.fixture('routing-map-writer.ts');
}, 120_000); // transpiling all of src/: seconds alone, far longer on a loaded machine
afterAll(() => {
  js.cleanup();
  fs.rmSync(dir, { recursive: true, force: true });
});

const KEYS = 40;
const KILLS = 30;
/** Independent databases killed in parallel: child start-up, not the check, is the slow part. */
const LANES = 2;

/**
 * Runs the writer until it has reported `commits` more commits, then SIGKILLs it mid-write.
 * Resolves with the last version it reported as committed.
 */
function runAndKill(file: string, commits: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [writer, file, String(KEYS)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let seen = 0;
    let last = 0;
    let stderr = '';
    let partial = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop()!; // a line may straddle two chunks
      for (const line of lines) {
        const match = /^committed (\d+)$/.exec(line);
        if (match === null) continue;
        last = Number(match[1]);
        if (++seen === commits) child.kill('SIGKILL');
      }
    });
    // 'close' waits for stdout to drain, so `last` is the child's final report, not the parent's lag.
    child.on('close', (_code, signal) => {
      if (signal === 'SIGKILL') resolve(last);
      else reject(new Error(`writer exited on its own: ${stderr}`));
    });
  });
}

describe('STO-3 the routing map is crash-atomic', () => {
  it(`after ${KILLS} SIGKILLs mid-rewrite, the map on disk is always exactly one whole version`, async () => {
    const lanes = Array.from({ length: LANES }, (_, i) => killRepeatedly(path.join(dir, `state-${i}.db`)));
    expect((await Promise.all(lanes)).reduce((a, b) => a + b, 0)).toBe(KILLS);
    // 30 child starts, 15 after one another in each lane: under a second each alone, several
    // seconds each on a 2-core machine running other test files beside this one.
  }, 240_000);
});

async function killRepeatedly(file: string): Promise<number> {
  let previous = 0;
  let kills = 0;
  for (; kills < KILLS / LANES; kills++) {
    {
      const reported = await runAndKill(file, 1 + Math.floor(Math.random() * 4));
      const db = openDatabase(file);
      const routes = db
        .prepare(
          `SELECT r.session_key, r.display_name, r.total_tokens, r.session_id, s.closed_at
             FROM routes r JOIN sessions s ON s.session_id = r.session_id`,
        )
        .all() as { display_name: string; total_tokens: number; closed_at: string | null }[];
      const open = db.prepare('SELECT count(*) FROM sessions WHERE closed_at IS NULL').pluck().get();
      db.close();

      expect(routes).toHaveLength(KEYS);
      const versions = new Set(routes.map((r) => r.display_name));
      expect(versions.size).toBe(1);
      const version = Number([...versions][0]!.slice(1));
      // Every row of the entry belongs to that version, and its session is the one left open.
      expect(routes.every((r) => r.total_tokens === version && r.closed_at === null)).toBe(true);
      expect(open).toBe(KEYS);
      // Nothing acknowledged was lost; at most the commit in flight at the kill landed too.
      expect(version).toBeGreaterThanOrEqual(reported);
      expect(version).toBeLessThanOrEqual(reported + 1);
      expect(version).toBeGreaterThan(previous);
      previous = version;
    }
  }
  return kills;
}
