/**
 * Issue 26 item 5 through the real daemon on a real small filesystem: the home lives on a tmpfs
 * with a size limit. A turn ends while the disk is full, so its settlement is refused
 * (SQLITE_FULL); once the filler is removed the same daemon settles it and runs the message queued
 * behind it, with no restart. Needs root (mount); skipped otherwise.
 */
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startDemoModel } from '../../src/runtime/demo/server.js';
import { requireBuild } from './cli.js';
import { nextEvent, startDaemon, type RunningDaemon } from './gateway-harness.js';
import { createAttached, tempDir } from './seed-fixture.js';
import { canMount, fillDisk, mountSmallDisk, unmountSmallDisks } from './small-disk.js';

const closers: (() => Promise<unknown>)[] = [];
beforeAll(requireBuild);
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  unmountSmallDisks();
});

describe.skipIf(!canMount)('a full disk that empties again', () => {
  it(
    'resumes the waiting session once storage is back, without a restart',
    { timeout: 120_000 },
    async () => {
      const disk = mountSmallDisk('24m');
      const demo = await startDemoModel();
      closers.push(() => demo.close());
      const home = join(disk, 'home');
      const daemon: RunningDaemon = await startDaemon({
        home,
        config: [`model: {base_url: ${JSON.stringify(demo.baseUrl)}, model: gatehouse-demo}`].join('\n'),
      });
      closers.push(() => daemon.stop());
      const client = await daemon.connect();
      const session = await createAttached(client, { request_id: 'r', cwd: tempDir(), toolsets: [] });

      // The first turn's model call is held: the disk fills while it runs, and its answer cannot be
      // stored when it ends (think: the answer repeats the message twice, as reasoning and as text,
      // more than the write-ahead log already holds).
      demo.hold();
      const big = `think: ${'x'.repeat(200_000)}`;
      const first = await client.call<{ admission_id: string }>('prompt.submit', {
        session_id: session,
        submission_id: 's-1',
        text: big,
      });
      await demo.waitForRequests(1);
      await client.call('prompt.submit', { session_id: session, submission_id: 's-2', text: 'second' });
      // The write-ahead log is emptied first, as a checkpoint leaves it: what the turn writes next
      // needs new space on the disk (an idle log keeps its size and would take it).
      const db = new Database(join(home, 'profiles', 'default', 'state.db'));
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
      const filler = fillDisk(disk);
      const settled = nextEvent(
        client,
        'admission.settled',
        (e) => e.event['admission_id'] === first.admission_id,
        60_000,
      );
      // Viewers are told the write was refused and the session waits.
      const told = nextEvent(client, 'session.storage_waiting', (e) => e.session_id === session, 60_000);
      demo.release();

      // The settlement is refused while the disk is full: the session waits (nothing settled).
      const stalled = await Promise.race([settled.then(() => 'settled'), told.then(() => 'refused')]);
      expect(stalled).toBe('refused');

      // Space comes back: the same daemon settles the turn and runs the queued message.
      const second = nextEvent(
        client,
        'turn.complete',
        (e) => e.event['final_text'] === 'Demo model (scripted stand-in): you said: second',
        60_000,
      );
      const back = nextEvent(client, 'session.storage_back', (e) => e.session_id === session, 60_000);
      rmSync(filler);
      await back;
      await settled;
      expect((await second).event).toMatchObject({ outcome: 'completed' });
    },
  );
});
