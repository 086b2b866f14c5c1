import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RotatingLogFile } from '../../../src/daemon/log-file.js';
import { RepeatLimiter } from '../../../src/daemon/log-repeats.js';
import { createLogger, flushRepeatedLines, SUPPRESSED_MESSAGE } from '../../../src/daemon/logger.js';

const tempLog = () => join(mkdtempSync(join(tmpdir(), 'gh-log-')), 'logs', 'gateway.log');
const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { msg: string; repeated?: string; suppressed?: number });

describe('the log is bounded (issue 12 item 4)', () => {
  it('rotates by size, keeps the configured number of owner-only files', () => {
    const file = tempLog();
    const logger = createLogger({ file, rotation: { maxBytes: 2000, keep: 2 } });
    for (let i = 0; i < 200; i++) logger.info({ i, pad: 'x'.repeat(50) }, 'line');
    for (const path of [file, `${file}.1`, `${file}.2`]) {
      expect(statSync(path).size).toBeLessThanOrEqual(2000);
      expect(statSync(path).mode & 0o777).toBe(0o600);
    }
    expect(existsSync(`${file}.3`)).toBe(false);
    // Nothing is lost within what is kept: the newest lines are in order across the files.
    const kept = [...lines(`${file}.2`), ...lines(`${file}.1`), ...lines(file)] as unknown as { i: number }[];
    expect(kept.at(-1)!.i).toBe(199);
    expect(kept.map((l) => l.i)).toEqual(kept.map((_, n) => 200 - kept.length + n));
  });

  it('appends to an existing file and rotates it by its current size', () => {
    const file = tempLog();
    createLogger({ file }).info('first run');
    const log = new RotatingLogFile(file, { maxBytes: 100, keep: 1 });
    log.write(`${'y'.repeat(90)}\n`);
    log.close();
    expect(readFileSync(`${file}.1`, 'utf8')).toContain('first run');
    expect(readFileSync(file, 'utf8')).toBe(`${'y'.repeat(90)}\n`);
  });

  it('writes a repeated warning a few times per window, then one summary with the count', () => {
    const file = tempLog();
    const clock = { now: 0 };
    const logger = createLogger({ file, now: () => clock.now, repeats: { perWindow: 3, windowMs: 1000 } });
    for (let i = 0; i < 1000; i++) logger.warn({ peer: '127.0.0.1' }, 'upgrade refused');
    logger.warn('something else');
    logger.error('errors are never suppressed');
    logger.error('errors are never suppressed');
    clock.now = 1000;
    logger.warn('upgrade refused'); // a new window: the summary of the last comes first
    for (let i = 0; i < 5; i++) logger.warn('upgrade refused');
    flushRepeatedLines(logger);
    const written = lines(file);
    expect(written.map((l) => l.msg)).toEqual([
      'upgrade refused',
      'upgrade refused',
      'upgrade refused',
      'something else',
      'errors are never suppressed',
      'errors are never suppressed',
      SUPPRESSED_MESSAGE,
      'upgrade refused',
      'upgrade refused',
      'upgrade refused',
      SUPPRESSED_MESSAGE,
    ]);
    expect(written[6]).toMatchObject({ repeated: 'upgrade refused', suppressed: 997 });
    expect(written[10]).toMatchObject({ repeated: 'upgrade refused', suppressed: 3 });
  });

  it('the limiter reports windows that ended with suppressed repeats, once', () => {
    const clock = { now: 0 };
    const limiter = new RepeatLimiter(() => clock.now, 1, 1000);
    expect([limiter.admit('a').write, limiter.admit('a').write, limiter.admit('b').write]).toEqual([
      true,
      false,
      true,
    ]);
    expect(limiter.due()).toEqual([]);
    clock.now = 1000;
    expect(limiter.due()).toEqual([{ key: 'a', suppressed: 1 }]);
    expect(limiter.due()).toEqual([]);
  });
});
