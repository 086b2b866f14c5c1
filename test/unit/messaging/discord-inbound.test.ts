/**
 * The Discord adapter's inbound against the loopback stand-in: sources by KEY-1, the catch-up
 * cursor, and a message handed in but never taken (the process died first) read again by the
 * next start, while one taken is not.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { MessageEvent } from '../../../src/domain/messaging/adapter.js';
import { buildSessionKey } from '../../../src/domain/session/key.js';
import { DiscordAdapter } from '../../../src/surfaces/platforms/discord/adapter.js';
import { ChannelCursor } from '../../../src/surfaces/platforms/discord/cursor.js';
import {
  parseApprovalClick,
  slashCommandsBody,
  commandText,
} from '../../../src/surfaces/platforms/discord/commands.js';
import type { PlatformCursors } from '../../../src/domain/ports/platform-cursors.js';
import { BOT_ID, startDiscordStandIn, type DiscordStandIn } from '../../fixtures/discord-standin.js';

const ANN = { id: '302', username: 'ann', global_name: 'Ann' };

function memoryCursors(): PlatformCursors & { rows: Map<string, string> } {
  const rows = new Map<string, string>();
  return {
    rows,
    readCursors: () => Promise.resolve(new Map(rows)),
    saveCursor: (_platform, channel, id) => {
      rows.set(channel, id);
      return Promise.resolve();
    },
  };
}

let standIn: DiscordStandIn | null = null;
const adapters: DiscordAdapter[] = [];
afterEach(async () => {
  for (const adapter of adapters.splice(0)) await adapter.stop();
  await standIn?.close();
  standIn = null;
});

async function started(
  sink: (event: MessageEvent) => Promise<void>,
  cursors: PlatformCursors,
  extra: Partial<ConstructorParameters<typeof DiscordAdapter>[0]> = {},
): Promise<DiscordAdapter> {
  const adapter = new DiscordAdapter({ token: standIn!.token, apiRoot: standIn!.apiRoot, cursors, ...extra });
  adapters.push(adapter);
  await adapter.start(sink);
  return adapter;
}

const until = async (check: () => boolean) => {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe('ChannelCursor', () => {
  it('passes a message only once everything older was taken', () => {
    const cursor = new ChannelCursor(10n);
    cursor.handed(11n);
    cursor.handed(12n);
    expect(cursor.taken(12n)).toBeNull(); // 11 is still on its way in
    expect(cursor.taken(11n)).toBe(12n);
    cursor.handed(5n); // older than the cursor: already read
    expect(cursor.busy).toBe(false);
  });
});

describe('Discord commands', () => {
  it('registers every chat command and reads an invocation and a button back as command text', () => {
    expect(slashCommandsBody()).toHaveLength(13);
    expect(commandText('budget', [{ name: 'action', type: 3, value: 'raise --tokens 9' }])).toBe(
      '/budget raise --tokens 9',
    );
    expect(commandText('budget', undefined)).toBe('/budget');
    expect(commandText('queue', [{ name: 'message', type: 3, value: ' later ' }])).toBe('/queue later');
    expect(commandText('approve', [{ name: 'scope', type: 3, value: 'session' }])).toBe('/approve session');
    expect(commandText('unknown', undefined)).toBeNull();
    expect(parseApprovalClick('gh:always:3:p_1')).toEqual({
      text: '/approve always',
      prompt: { prompt_id: 'p_1', execution_generation: 3 },
    });
    expect(parseApprovalClick('someone-else')).toBeNull();
  });
});

describe('Discord inbound', () => {
  it('keys DMs, guild channels and threads by KEY-1 with the guild id and role_authorized in the source', async () => {
    standIn = await startDiscordStandIn();
    standIn.channel({ id: '500', type: 1 });
    standIn.channel({ id: '901', type: 0, name: 'general', guild_id: '900' });
    standIn.channel({ id: '902', type: 11, name: 'plans', guild_id: '900', parent_id: '901' });
    standIn.member('900', ANN.id, ['777']);
    const events: MessageEvent[] = [];
    const adapter = await started(
      (e) => {
        events.push(e);
        return Promise.resolve();
      },
      memoryCursors(),
      { allowedRoleIds: ['777'] },
    );
    standIn.say('500', ANN, 'dm');
    standIn.say('901', ANN, `<@${BOT_ID}> in channel`);
    standIn.say('902', ANN, `<@${BOT_ID}> in thread`);
    await until(() => events.length === 3);
    expect(events.map((e) => buildSessionKey(e.source))).toEqual([
      'agent:main:discord:dm:500',
      'agent:main:discord:group:901:user_302',
      'agent:main:discord:group:901:thread_902',
    ]);
    expect(events.map((e) => e.text)).toEqual(['dm', 'in channel', 'in thread']);
    expect(events[2]!.source).toMatchObject({
      guild_id: '900',
      parent_chat_id: '901',
      role_authorized: true,
    });
    expect(events[0]!.source.role_authorized).toBe(false);
    // Roles alone restrict: the DM sender holds no role there, so the adapter refuses it.
    expect(adapter.authorize(events[0]!.source)).toBe(false);
    expect(adapter.authorize(events[1]!.source)).toBe(true);
  });

  it('a message handed in but never taken is read again at the next start; a taken one is not', async () => {
    standIn = await startDiscordStandIn();
    standIn.channel({ id: '500', type: 1 });
    const cursors = memoryCursors();
    const first: string[] = [];
    const adapter = await started((e) => {
      first.push(e.text);
      // The gateway takes the first message; the process dies before it takes the second.
      return e.text === 'taken' ? Promise.resolve() : new Promise<void>(() => undefined);
    }, cursors);
    const takenId = standIn.say('500', ANN, 'taken');
    standIn.say('500', ANN, 'not taken');
    await until(() => first.length === 2 && cursors.rows.get('500') === takenId);
    await adapter.stop();

    const second: string[] = [];
    await started((e) => {
      second.push(e.text);
      return Promise.resolve();
    }, cursors);
    await until(() => second.length === 1);
    expect(second).toEqual(['not taken']);
    const read = standIn.calls.find((c) => c.method === 'GET' && c.path === '/channels/500/messages')!;
    expect(read.query.get('after')).toBe(takenId);
  });

  it("a channel's first message writes its cursor before it is handed in: a crash within the batch window still reads the channel back", async () => {
    standIn = await startDiscordStandIn();
    standIn.channel({ id: '501', type: 1 });
    const cursors = memoryCursors();
    const rowsAtHanding: (string | undefined)[] = [];
    await started(() => {
      rowsAtHanding.push(cursors.rows.get('501'));
      return Promise.resolve();
    }, cursors);
    const id = standIn.say('501', ANN, 'first words');
    await until(() => rowsAtHanding.length === 1);
    // Just before the message, so the catch-up after a crash reads it (the ledger drops it if taken).
    expect(rowsAtHanding).toEqual([String(BigInt(id) - 1n)]);
  });
});

describe('Discord typing under the global request limit (50 per second per bot)', () => {
  it('"typing…" is sent while the budget lasts, and skipped while replies wait on the limit', async () => {
    standIn = await startDiscordStandIn();
    const adapter = await started(() => Promise.resolve(), memoryCursors(), { registerCommands: false });
    for (let i = 0; i < 60; i++) standIn.channel({ id: String(700 + i), type: 1 });
    await adapter.sendTyping('700', null);
    expect(standIn.calls.filter((c) => c.path.endsWith('/typing'))).toHaveLength(1);

    // 60 replies at once: the library lets 50 through in this second and holds the rest.
    const sends = Array.from({ length: 60 }, (_, i) =>
      adapter.send(String(700 + i), `reply ${i}`, { thread_id: null, reply_to: null }),
    );
    const posted = (c: { method: string; path: string }) =>
      c.method === 'POST' && c.path.endsWith('/messages');
    await standIn.waitForCall(posted, 50);
    await adapter.sendTyping('701', null);
    await Promise.all(sends);
    expect(standIn.calls.filter(posted)).toHaveLength(60);
    expect(standIn.calls.filter((c) => c.path.endsWith('/typing')).map((c) => c.path)).toEqual([
      '/channels/700/typing',
    ]);
  });
});
