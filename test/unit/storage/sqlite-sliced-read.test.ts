/**
 * A long transcript is read in slices with the event loop free between them (issue 32 aim 3), and
 * the answer is still one state of the transcript: whole, in order, and never a mix of before and
 * after a rewind or a rewrite that happened between two slices.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';
import { openDatabase, type SqliteDatabase } from '../../../src/storage/sqlite/database.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import {
  appendToTranscript,
  loadTranscript,
  loadTranscriptInSlices,
  rewindSession,
  rewriteTranscript,
  TRANSCRIPT_SLICE,
} from '../../../src/storage/sqlite/transcript-actions.js';
import { source } from '../../shared/fixtures.js';

let dir: string;
let file: string;
let store: SqliteSessionStore;
let db: SqliteDatabase;
let sessionId: string;

const turn = (i: number): TranscriptMessage[] => [
  { role: 'user', content: `question ${i}` },
  { role: 'assistant', content: `answer ${i}` },
];

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-slices-'));
  file = path.join(dir, 'state.db');
  store = SqliteSessionStore.open(file);
  sessionId = (await store.getOrCreateSession('k', source())).entry.session_id;
  // 2.5 slices of the store's own size, so its loadTranscript crosses slice boundaries.
  const all: TranscriptMessage[] = [];
  for (let i = 0; i < (TRANSCRIPT_SLICE * 5) / 4; i++) all.push(...turn(i));
  await store.appendToTranscript(sessionId, all);
  db = openDatabase(file);
});
afterEach(async () => {
  db.close();
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs `edit` between the first and the second slice of a sliced read. */
function betweenSlices(edit: () => void): void {
  setImmediate(edit);
}

describe('loadTranscript reads a long transcript in slices', () => {
  it('returns the whole transcript in order, as one read does, with other work run in between', async () => {
    let ranMeanwhile = 0;
    const tick = setInterval(() => ranMeanwhile++, 0);
    const immediates = (async () => {
      for (let i = 0; i < 3; i++) await new Promise<void>((r) => setImmediate(r));
      ranMeanwhile++;
    })();
    const sliced = await store.loadTranscript(sessionId);
    clearInterval(tick);
    await immediates;
    expect(sliced).toEqual(loadTranscript(db, sessionId));
    expect(sliced).toHaveLength((TRANSCRIPT_SLICE * 5) / 2);
    expect(sliced.map((m) => m.content).slice(0, 3)).toEqual(['question 0', 'answer 0', 'question 1']);
    expect(sliced.at(-1)!.content).toBe(`answer ${(TRANSCRIPT_SLICE * 5) / 4 - 1}`);
    // Other callbacks ran while it was read: the event loop was not held for the whole read.
    expect(ranMeanwhile).toBeGreaterThan(0);
  });

  it('includes what is appended between slices, after what was there', async () => {
    betweenSlices(() => appendToTranscript(db, sessionId, turn(99_999)));
    const sliced = await loadTranscriptInSlices(db, sessionId, 100);
    expect(sliced).toEqual(loadTranscript(db, sessionId));
    expect(sliced.at(-1)!.content).toBe('answer 99999');
  });

  it('starts again when a rewind between slices removed messages it had already read', async () => {
    const before = loadTranscript(db, sessionId);
    // Undo the last 1,200 turns: the rewind starts inside the first slices of 1,000 messages.
    betweenSlices(() => rewindSession(db, sessionId, (TRANSCRIPT_SLICE * 5) / 4 - 300));
    const sliced = await loadTranscriptInSlices(db, sessionId, 1_000);
    const after = loadTranscript(db, sessionId);
    expect(after).toHaveLength(600);
    expect(sliced).toEqual(after);
    expect(before.length).toBeGreaterThan(after.length);
  });

  it('starts again when a rewrite between slices replaced the transcript', async () => {
    betweenSlices(() => rewriteTranscript(db, sessionId, [{ role: 'user', content: 'summary' }]));
    const sliced = await loadTranscriptInSlices(db, sessionId, 100);
    expect(sliced.map((m) => m.content)).toEqual(['summary']);
  });

  it('reads in one statement after the transcript was edited during every sliced attempt', async () => {
    let edits = 0;
    let reading = true;
    const keepEditing = () => {
      if (reading) {
        edits++;
        rewriteTranscript(db, sessionId, [...turn(edits), ...turn(edits + 1)]);
        setImmediate(keepEditing);
      }
    };
    setImmediate(keepEditing);
    const sliced = await loadTranscriptInSlices(db, sessionId, 1);
    reading = false;
    expect(sliced).toEqual(loadTranscript(db, sessionId));
    expect(sliced).toHaveLength(4);
    expect(edits).toBeGreaterThanOrEqual(3);
  });

  it('answers an unknown session with no messages, as a whole read does', async () => {
    expect(await store.loadTranscript('no-such-session')).toEqual([]);
  });
});
