import { afterEach, describe, expect, it } from 'vitest';
import { redactChatId, redactUserId } from '../../../src/domain/session/context.js';
import { ALICE, createHarness, dmWith, type Harness } from '../../fixtures/messaging-harness.js';
import { MemoryAdapter } from '../../fixtures/memory-adapter.js';
import { RESUME_NOTE } from '../../../src/domain/messaging/turn.js';
import { putTurnMarker } from '../../../src/storage/sqlite/ops/turn-markers.js';
import type { InboundSink, StatusListener } from '../../../src/domain/messaging/adapter.js';

/** An adapter whose start returns while it still connects (as the Discord and Slack ones do). */
class ConnectingAdapter extends MemoryAdapter {
  override start(sink: InboundSink, onStatus?: StatusListener): Promise<void> {
    void super.start(sink, onStatus);
    this.state = 'starting';
    return Promise.resolve();
  }
}

let h: Harness;
afterEach(async () => {
  await h?.dispose();
});

function systemPrompts(): string[] {
  return h.model.requests.map((r) => String(r.body!.messages![0]!.content));
}

describe('CTX-2 redaction in the prompt text only', () => {
  it('hashes Telegram user and chat ids in the prompt; routing and replies use the real ids', async () => {
    h = await createHarness();
    h.build({ gateway: { redactPii: true } });
    await h.start();
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'hi' });
    const reply = await h.waitForText(ALICE.id, /you said: hi/);
    const prompt = systemPrompts()[0]!;
    expect(prompt).toContain(redactUserId('111'));
    expect(prompt).toContain(redactChatId('telegram', '111'));
    expect(prompt).not.toMatch(/\b111\b/);
    expect(reply.payload.chat_id).toBe(ALICE.id);
    expect((await h.store.listSessions()).entries[0]!.session_key).toBe('agent:main:telegram:dm:111');
  });

  it('leaves Discord ids and plugin platforms not marked pii_safe raw; redacts a pii_safe plugin', async () => {
    h = await createHarness();
    h.build({ gateway: { redactPii: true } });
    const discord = new MemoryAdapter('discord');
    const plugin = new MemoryAdapter('mastodon', false);
    const safePlugin = new MemoryAdapter('irc', true);
    for (const adapter of [discord, plugin, safePlugin]) h.gateway.addAdapter(adapter);
    await h.start();
    for (const [adapter, n] of [
      [discord, 1],
      [plugin, 2],
      [safePlugin, 3],
    ] as const) {
      const done = h.gateway.events.next('delivery:sent');
      adapter.receive({ chat_id: '4242', chat_type: 'dm', user_id: '777', user_name: 'zoe' }, 'hello');
      await done;
      expect(h.model.requests).toHaveLength(n);
      expect(adapter.sent.at(-1)!.chatId).toBe('4242');
    }
    const [discordPrompt, pluginPrompt, safePrompt] = systemPrompts();
    expect(discordPrompt).toContain('777');
    expect(pluginPrompt).toContain('777');
    expect(safePrompt).not.toContain('777');
    expect(safePrompt).toContain(redactUserId('777'));
    // SRC-1: a plugin's own platform name round-trips into the key and the stored origin.
    const keys = (await h.store.listSessions()).entries.map((e) => e.session_key).sort();
    expect(keys).toEqual([
      'agent:main:discord:dm:4242',
      'agent:main:irc:dm:4242',
      'agent:main:mastodon:dm:4242',
    ]);
  });
});

describe('QUE-3 a promoted event no adapter can take', () => {
  it('goes back on the queue and runs once the adapter is back', async () => {
    h = await createHarness();
    h.build();
    const plugin = new MemoryAdapter('mastodon');
    h.gateway.addAdapter(plugin);
    await h.start();
    plugin.state = 'failed';
    const requeued = h.gateway.events.next('queue:requeued');
    plugin.receive({ chat_id: 'c1', chat_type: 'dm', user_id: 'u1' }, 'first');
    await requeued;
    expect(h.gateway.describeLane('agent:main:mastodon:dm:c1')).toEqual({ running: false, depth: 1 });
    plugin.state = 'running';
    let delivered = 0;
    const both = new Promise<void>((resolve) =>
      h.gateway.events.on('delivery:sent', () => {
        if (++delivered === 2) resolve();
      }),
    );
    plugin.receive({ chat_id: 'c1', chat_type: 'dm', user_id: 'u1' }, 'second');
    await both;
    expect(plugin.sent.map((s) => s.text.replace(/^.*you said: /, ''))).toEqual(['first', 'second']);
  });

  it('REC-7 a turn the restart resumes while its adapter still connects runs once the adapter is up, with no further message', async () => {
    h = await createHarness();
    h.build();
    const first = new MemoryAdapter('mastodon');
    h.gateway.addAdapter(first);
    await h.start();
    const answered = h.gateway.events.next('delivery:sent');
    first.receive({ chat_id: 'c3', chat_type: 'dm', user_id: 'u3' }, 'hello');
    await answered;
    const key = 'agent:main:mastodon:dm:c3';
    const sessionId = (await h.store.listSessions()).entries.find((e) => e.session_key === key)!.session_id;
    await h.stop();
    // What a SIGKILL mid-turn leaves: the turn's marker, no clean-shutdown marker.
    h.build();
    h.store.db.prepare('DELETE FROM messaging_state').run();
    putTurnMarker(h.store.db, key, sessionId, new Date());
    // The adapter connects in the background and comes up while the gateway still restores: just
    // after the auto-continue found it not running and put the resumed turn back (QUE-3).
    const connecting = new ConnectingAdapter('mastodon');
    h.gateway.addAdapter(connecting);
    h.gateway.events.on('queue:requeued', () => connecting.setState('running'));
    const resumed = h.gateway.events.next('delivery:sent');
    await h.start();
    await resumed;
    expect(connecting.sent.map((s) => s.text).at(-1)).toMatch(/you said: /);
    expect(h.model.requests.filter((r) => JSON.stringify(r.body).includes(RESUME_NOTE))).not.toHaveLength(0);
  });

  it('runs as soon as the adapter reports it is running again, with no further message', async () => {
    h = await createHarness();
    h.build();
    const plugin = new MemoryAdapter('mastodon');
    h.gateway.addAdapter(plugin);
    await h.start();
    const statuses: string[] = [];
    h.gateway.events.on('adapter:status', (s) => statuses.push(`${s.platform}:${s.state}`));
    plugin.setState('failed');
    const requeued = h.gateway.events.next('queue:requeued');
    plugin.receive({ chat_id: 'c2', chat_type: 'dm', user_id: 'u2' }, 'held back');
    await requeued;
    const delivered = h.gateway.events.next('delivery:sent');
    plugin.setState('running');
    await delivered;
    expect(plugin.sent.map((s) => s.text.replace(/^.*you said: /, ''))).toEqual(['held back']);
    expect(statuses).toEqual(['mastodon:failed', 'mastodon:running']);
  });
});
