import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/daemon/logger.js';

describe('daemon log never holds a secret (issue 4, test 8)', () => {
  it('redacts secret keys in log objects and known secret values anywhere in a line', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-log-')), 'logs', 'gateway.log');
    const logger = createLogger({ file, secrets: ['sk-known-value-42', 'quote"secret'] });
    logger.info({ api_key: 'sk-top-level-1' }, 'top level');
    logger.info({ model: { api_key: 'sk-nested-2' } }, 'nested');
    logger.info({ req: { headers: { authorization: 'Bearer tok-3', cookie: 'gh_session=c-4' } } }, 'headers');
    logger.info({ ticket: 't-5', password: 'pw-6', token: 'tok-7', user: 'alice' }, 'credentials');
    logger.warn('a message string mentioning sk-known-value-42 by accident');
    logger.info({ note: 'quote"secret' }, 'escaped');

    const text = readFileSync(file, 'utf8');
    for (const secret of [
      'sk-top-level-1',
      'sk-nested-2',
      'tok-3',
      'c-4',
      't-5',
      'pw-6',
      'tok-7',
      'sk-known-value-42',
      'quote\\"secret',
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('alice');
    expect(text).toContain('[redacted]');
    expect(text.trim().split('\n')).toHaveLength(6);
  });
});
