/**
 * 007: reserved for the compression branch (issue 11), which owns this number. This placeholder keeps
 * the sequence 1..n without gaps on branches that do not carry it yet; when the branches merge, the
 * compression branch's own 007 replaces this file. It changes nothing.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 7,
  name: 'reserved_compression',
  up() {},
};
