import { describe, expect, it } from 'vitest';
import { CHAT_TYPES } from '../../src/index.js';

describe('vocabulary', () => {
  it('names the four chat types of SRC-1', () => {
    expect([...CHAT_TYPES]).toEqual(['dm', 'group', 'channel', 'thread']);
  });
});
