/**
 * The behaviour every PlatformCursors backend must show (migration 013), observed through the
 * contract only: a channel's cursor is kept per platform, moved by a save, and survives a reopen.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PlatformCursors } from '../../src/domain/ports/platform-cursors.js';

export interface CursorsHarness {
  cursors: PlatformCursors;
  /** Closes the storage and opens it again. */
  reopen(): Promise<PlatformCursors>;
  cleanup(): Promise<void>;
}

export function runPlatformCursorsSuite(name: string, open: () => Promise<CursorsHarness>): void {
  describe(`${name}: PlatformCursors behaviour`, () => {
    let h: CursorsHarness;
    beforeEach(async () => {
      h = await open();
    });
    afterEach(() => h.cleanup());

    it('a platform without cursors reads as an empty map', async () => {
      expect(await h.cursors.readCursors('discord')).toEqual(new Map());
    });

    it('a save sets the channel cursor and a later save moves it; other channels keep theirs', async () => {
      await h.cursors.saveCursor('discord', 'c1', '100');
      await h.cursors.saveCursor('discord', 'c2', '200');
      await h.cursors.saveCursor('discord', 'c1', '150');
      expect(await h.cursors.readCursors('discord')).toEqual(
        new Map([
          ['c1', '150'],
          ['c2', '200'],
        ]),
      );
    });

    it('cursors are kept per platform: one channel id on two platforms is two cursors', async () => {
      await h.cursors.saveCursor('discord', 'same', '1');
      await h.cursors.saveCursor('slack', 'same', '2');
      expect(await h.cursors.readCursors('discord')).toEqual(new Map([['same', '1']]));
      expect(await h.cursors.readCursors('slack')).toEqual(new Map([['same', '2']]));
    });

    it('a saved cursor survives closing and reopening the store', async () => {
      await h.cursors.saveCursor('discord', 'c1', '42');
      const reopened = await h.reopen();
      expect(await reopened.readCursors('discord')).toEqual(new Map([['c1', '42']]));
    });
  });
}
