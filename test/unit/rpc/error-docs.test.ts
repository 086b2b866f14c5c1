import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HTTP_REJECTIONS, RPC_REASONS, SERVER_ERROR_RANGE } from '../../../src/protocol/errors.js';

const docs = readFileSync(new URL('../../../docs/protocol.md', import.meta.url), 'utf8');

describe('LOC errors are one documented table', () => {
  it('gives every reason a distinct code, standard or in the reserved server range', () => {
    const codes = Object.values(RPC_REASONS).map((r) => r.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const [reason, { code }] of Object.entries(RPC_REASONS)) {
      expect(reason).toMatch(/^[a-z]+(_[a-z]+)*$/);
      const standard = code <= -32600 && code >= -32700;
      const server = code <= SERVER_ERROR_RANGE.highest && code >= SERVER_ERROR_RANGE.lowest;
      expect(standard || server).toBe(true);
    }
  });

  it('documents every JSON-RPC reason with its code, and every HTTP rejection with its status', () => {
    for (const [reason, { code }] of Object.entries(RPC_REASONS)) {
      expect(docs).toMatch(new RegExp(`\\| \`${reason}\` \\| ${code} \\|`));
    }
    for (const [reason, { status }] of Object.entries(HTTP_REJECTIONS)) {
      expect(docs).toMatch(new RegExp(`\\| \`${reason}\` \\| ${status} \\|`));
    }
  });
});
