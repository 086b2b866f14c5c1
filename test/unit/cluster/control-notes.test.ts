/** The relay's wake-up payloads (domain/ports/control-relay.ts): what one instance writes, another reads. */
import { describe, expect, it } from 'vitest';
import { formatControlNote, parseControlNote } from '../../../src/domain/ports/control-relay.js';

describe('control relay notes', () => {
  it('reads back what it writes', () => {
    for (const note of [
      { kind: 'request' as const, epoch: 7, id: 42 },
      { kind: 'answer' as const, epoch: 1, id: 9_007_199_254 },
    ]) {
      expect(formatControlNote(note)).toBe(`${note.kind}:${note.epoch}:${note.id}`);
      expect(parseControlNote(formatControlNote(note))).toEqual(note);
    }
  });

  it('drops anything malformed', () => {
    for (const payload of [
      '',
      'request',
      'request:1',
      'reply:1:2',
      'answer:x:2',
      'answer:1:2:3',
      'answer:1:2.5',
    ])
      expect(parseControlNote(payload)).toBeNull();
  });
});
