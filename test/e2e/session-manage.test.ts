/**
 * Issue 31: forking, archiving and deleting sessions through the real daemon, on SQLite and
 * PostgreSQL — by RPC and by the CLI exactly as docs/rpc-methods.md and docs/chat.md show them. A
 * fork copies the history up to one message into a new session that points at its source; a fork
 * point inside a turn that has not settled is refused; an archived session leaves the lists and
 * stays searchable; a deleted one leaves nothing behind in the store (transcripts, full-text index,
 * receipt, admissions, costs), and a running one is not deleted.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { RpcCallError } from '../../src/surfaces/client/rpc-client.js';
import { runCli } from './cli.js';
import { BACKENDS, nextEvent, storeEnv, type Backend, type RunningDaemon } from './gateway-harness.js';
import {
  modelConfig,
  quiet,
  tempDir,
  texts,
  useRecoveryRig,
  useSharedRig,
  type Snapshot,
} from './recovery-harness.js';
import { storeRows, type StoreRows } from './store-rows.js';

const rig = useRecoveryRig();
const TIMEOUT = 120_000;
const said = (text: string) => `Demo model (scripted stand-in): you said: ${text}`;

type Messages = Omit<Snapshot, 'messages'> & { messages: (Snapshot['messages'][number] & { id: number })[] };
type Listed = { sessions: { session_id: string; title: string | null; archived_at: string | null }[] };

async function turns(client: GatewayClient, session_id: string, ...inputs: string[]): Promise<void> {
  for (const text of inputs) {
    await client.call('prompt.submit', { session_id, submission_id: text, text });
    await quiet(client, session_id);
  }
}

async function refusal(client: GatewayClient, method: string, params: Record<string, unknown>) {
  try {
    await client.call(method, params);
  } catch (error) {
    if (error instanceof RpcCallError) return { reason: error.reason, message: error.message };
    throw error;
  }
  throw new Error(`${method} was not refused`);
}

/** Tables whose rows outlive a deleted session by design (deleteLocalSession's doc). */
const KEPT_AFTER_DELETE = new Set(['audit_log', 'budget_calls']);

/** `table.column` for every text column of the store's own tables holding `id` anywhere in it. */
async function rowsNaming(rows: StoreRows, store: Backend, id: string): Promise<string[]> {
  const columns =
    store === 'sqlite'
      ? await rows.all<{ t: string; c: string }>(
          `SELECT m.name AS t, p.name AS c FROM sqlite_master m, pragma_table_info(m.name) p
            WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE 'messages_fts%'
              AND p.type IN ('TEXT', '')`,
        )
      : await rows.all<{ t: string; c: string }>(
          `SELECT table_name AS t, column_name AS c FROM information_schema.columns
            WHERE table_schema = current_schema() AND data_type IN ('text', 'character varying', 'jsonb', 'json')`,
        );
  const naming: string[] = [];
  for (const { t, c } of columns) {
    if (KEPT_AFTER_DELETE.has(t)) continue;
    const found = await rows.all<{ n: number }>(
      `SELECT count(*) AS n FROM ${t} WHERE CAST(${c} AS TEXT) LIKE ?`,
      `%${id}%`,
    );
    if (Number(found[0]!.n) > 0) naming.push(`${t}.${c}`);
  }
  return naming;
}

const listed = async (client: GatewayClient, archived?: boolean) =>
  (
    await client.call<Listed>('session.list', {
      scope: 'all',
      ...(archived === undefined ? {} : { archived }),
    })
  ).sessions.map((s) => s.session_id);

describe.each(BACKENDS)('managing sessions on %s', (store) => {
  beforeAll(() => {
    rig.store = store;
  });

  it(
    'session.fork copies the history up to a message into a new session pointing at its source',
    { timeout: TIMEOUT },
    async () => {
      const demo = await rig.model();
      const d = await rig.daemon({ config: modelConfig(demo) });
      const client = await d.connect();
      const { session_id: source } = await client.call<Snapshot>('session.create', {
        cwd: tempDir(),
        title: 'Plans',
      });
      await turns(client, source, 'one', 'two');
      const snap = await client.call<Messages>('session.resume', { session_id: source });
      expect(texts(snap)).toEqual(['one', said('one'), 'two', said('two')]);
      const firstAnswer = snap.messages[1]!.id;

      const fork = await client.call<Messages & { forked_from: unknown; info: Record<string, unknown> }>(
        'session.fork',
        { session_id: source, message_id: firstAnswer },
      );
      expect(fork.session_id).not.toBe(source);
      expect(fork.forked_from).toEqual({ session_id: source, message_id: firstAnswer });
      expect(texts(fork)).toEqual(['one', said('one')]);
      expect(fork.info).toMatchObject({ title: 'Plans (fork)', forked_from: { session_id: source } });

      // The fork goes on by itself; the source is untouched.
      await turns(client, fork.session_id, 'three');
      expect(texts(await client.call<Snapshot>('session.resume', { session_id: fork.session_id }))).toEqual([
        'one',
        said('one'),
        'three',
        said('three'),
      ]);
      expect(texts(await client.call<Snapshot>('session.resume', { session_id: source }))).toHaveLength(4);
      // What the model saw in the fork's turn: the copied history, then the new message.
      const lastRequest = demo.requests.at(-1)!.body!.messages!.filter((m) => m.role !== 'system');
      expect(lastRequest.map((m) => m.content)).toEqual(['one', said('one'), 'three']);

      expect(await client.call('session.lineage', { session_id: source })).toMatchObject({
        forked_from: null,
        forks: [{ session_id: fork.session_id, title: 'Plans (fork)' }],
      });
      expect(await client.call('session.lineage', { session_id: fork.session_id })).toMatchObject({
        forked_from: { session_id: source, message_id: firstAnswer, title: 'Plans', exists: true },
      });

      // Without a message_id the whole history is copied; a request_id makes a repeat find it.
      const whole = { session_id: source, request_id: 'fork-all', title: 'All of it' };
      const all = await client.call<Messages>('session.fork', whole);
      expect(texts(all)).toEqual(['one', said('one'), 'two', said('two')]);
      expect((await client.call<Messages>('session.fork', whole)).session_id).toBe(all.session_id);

      expect(
        await refusal(client, 'session.fork', { session_id: source, message_id: 999_999_999 }),
      ).toMatchObject({
        reason: 'invalid_params',
      });
      expect(await refusal(client, 'session.fork', { session_id: 'nope', message_id: 1 })).toMatchObject({
        reason: 'not_found',
      });

      // The fork and its link survive a restart.
      await d.stop();
      const again = await rig.daemon({ home: d.home, config: modelConfig(demo) });
      const c2 = await again.connect();
      expect(await c2.call('session.info', { session_id: fork.session_id })).toMatchObject({
        forked_from: { session_id: source, message_id: firstAnswer },
      });
      expect(texts(await c2.call<Snapshot>('session.resume', { session_id: fork.session_id }))).toHaveLength(
        4,
      );
    },
  );

  describe('one daemon for a running turn and the CLI (a session of their own each)', () => {
    const shared = useSharedRig();
    let d: RunningDaemon;
    beforeAll(async () => {
      shared.store = store;
      d = await shared.daemon({ config: modelConfig(await shared.model()) });
    });

    it(
      'a running turn: its messages are no fork point and its session is not deleted',
      { timeout: TIMEOUT },
      async () => {
        const client = await d.connect();
        const { session_id } = await client.call<Snapshot>('session.create', { cwd: tempDir() });
        await turns(client, session_id, 'one');
        await client.call('session.resume', { session_id });
        const asked = nextEvent(client, 'approval.request', (e) => e.session_id === session_id);
        await client.call('prompt.submit', {
          session_id,
          submission_id: 'run',
          text: 'run: touch made-here',
        });
        const prompt = (await asked).event;
        const snap = await client.call<Messages>('session.resume', { session_id });
        const running = snap.messages.at(-1)!;
        expect(running.admission_id).toBeDefined();

        expect(await refusal(client, 'session.fork', { session_id, message_id: running.id })).toMatchObject({
          reason: 'fork_point_unsettled',
        });
        const earlier = await client.call<Messages>('session.fork', {
          session_id,
          message_id: snap.messages[1]!.id,
        });
        expect(texts(earlier)).toEqual(['one', said('one')]);

        expect(await refusal(client, 'session.delete', { session_id })).toMatchObject({
          reason: 'session_busy',
        });
        const settled = nextEvent(client, 'admission.settled', (e) => e.session_id === session_id);
        await client.call('approval.respond', {
          session_id,
          execution_generation: prompt['execution_generation'],
          prompt_id: prompt['prompt_id'],
          choice: 'deny',
        });
        await settled;
        expect(await client.call('session.delete', { session_id })).toMatchObject({ deleted: true });
      },
    );

    it(
      'archive, unarchive, rename and delete from the CLI; a deleted session leaves no rows',
      { timeout: TIMEOUT },
      async () => {
        const client = await d.connect();
        const { session_id: id } = await client.call<Snapshot>('session.create', { cwd: tempDir() });
        const { session_id: other } = await client.call<Snapshot>('session.create', { cwd: tempDir() });
        await turns(client, id, 'the zebrafish plan');
        await turns(client, other, 'another');
        const env = storeEnv(d.home);
        const cli = async (...args: string[]) => {
          const run = await runCli(d.home, args, { env });
          expect(run.stderr).toBe('');
          expect(run.code).toBe(0);
          return run.stdout;
        };

        expect(await cli('sessions', 'rename', id, 'Zebrafish')).toBe(`Renamed ${id}: Zebrafish\n`);
        expect(await cli('sessions', 'archive', id)).toBe(
          `Archived ${id}: "gatehouse sessions --archived" lists it; it is still searchable.\n`,
        );
        expect(await listed(client)).not.toContain(id);
        expect(await listed(client)).toContain(other);
        expect(await listed(client, true)).toEqual([id]);
        expect(await cli('sessions')).not.toContain(id);
        const archivedList = await cli('sessions', '--archived');
        expect(archivedList).toContain(id);
        expect(archivedList).toContain('Zebrafish');
        expect(archivedList).not.toContain(other);
        // Still searchable, and still usable.
        const hits = await client.call<{ hits: { session_id: string }[] }>('session.search', {
          query: 'zebrafish',
        });
        expect(hits.hits.map((h) => h.session_id)).toContain(id);
        expect(await cli('sessions', 'unarchive', id)).toBe(`Unarchived ${id}: it is listed again.\n`);
        expect(await listed(client)).toContain(id);

        // Without a terminal to confirm on, delete asks for --yes and deletes nothing.
        const unconfirmed = await runCli(d.home, ['sessions', 'delete', id], { env });
        expect(unconfirmed.code).toBe(1);
        expect(unconfirmed.stderr).toContain('pass --yes');
        expect(await listed(client)).toContain(id);

        await client.call('session.share', { session_id: id, member: 'member:bob', level: 'read' });
        const snap = await client.call<Messages>('session.resume', { session_id: id });
        const ids = snap.messages.map((m) => m.id);
        expect(await cli('sessions', 'delete', id, '--yes')).toBe(
          `Deleted ${id} (${ids.length} messages).\n`,
        );
        expect(await listed(client)).not.toContain(id);
        expect(await refusal(client, 'session.resume', { session_id: id })).toMatchObject({
          reason: 'not_found',
        });
        const after = await client.call<{ hits: { session_id: string }[] }>('session.search', {
          query: 'zebrafish',
        });
        expect(after.hits).toEqual([]);
        const gone = await runCli(d.home, ['sessions', 'delete', id, '--yes'], { env });
        expect(gone.code).toBe(1);
        expect(gone.stderr).toContain(`no session ${id}`);

        // The last case of this block: the shared daemon stops before its store is read.
        await d.stop();
        const rows = await storeRows(d, store);
        try {
          const count = async (sql: string, ...params: unknown[]) =>
            Number((await rows.all<{ n: number }>(`SELECT count(*) AS n FROM ${sql}`, ...params))[0]!.n);
          const key = `agent:main:local:dm:${id}`;
          expect(await count('local_sessions WHERE logical_id = ?', id)).toBe(0);
          expect(await count('admissions WHERE logical_id = ?', id)).toBe(0);
          expect(await count('private_receipts WHERE key = ?', `gateway.local_policy.v1:${id}`)).toBe(0);
          expect(await count('sessions WHERE session_key = ?', key)).toBe(0);
          expect(await count('routes WHERE session_key = ?', key)).toBe(0);
          expect(await count('turn_costs WHERE session_key = ?', key)).toBe(0);
          expect(await count(`messages WHERE id IN (${ids.map(() => '?').join(', ')})`, ...ids)).toBe(0);
          if (store === 'sqlite') {
            expect(await count(`messages_fts WHERE messages_fts MATCH 'zebrafish'`)).toBe(0);
          } else {
            expect(
              await count(`messages_search WHERE message_id IN (${ids.map(() => '?').join(', ')})`, ...ids),
            ).toBe(0);
          }
          // Nothing else anywhere names it: every text column of every table, tables added later
          // included. Kept on purpose (deleteLocalSession): the append-only audit trail and the
          // budget's spend records.
          expect(await rowsNaming(rows, store, id)).toEqual([]);
          // The other session is whole.
          expect(await count('local_sessions WHERE logical_id = ?', other)).toBe(1);
          expect(await count('turn_costs WHERE session_key = ?', `agent:main:local:dm:${other}`)).toBe(1);
        } finally {
          await rows.close();
        }
      },
    );
  });
});
