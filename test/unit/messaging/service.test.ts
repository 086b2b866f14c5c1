import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/daemon/config.js';
import type { DaemonContext } from '../../../src/daemon/daemon.js';
import { ensureHomeDirs, homeLayout } from '../../../src/daemon/home.js';
import { createLogger } from '../../../src/daemon/logger.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { builtinPlatforms, type PlatformConfig } from '../../../src/surfaces/platforms/registry.js';
import { messagingService } from '../../../src/daemon/services/messaging.js';
import { startRuntime } from '../../../src/daemon/services/runtime.js';
import type { PromptBroker } from '../../../src/runtime/approvals/broker.js';
import { startDemoModel } from '../../../src/runtime/demo/server.js';
import { MemoryAdapter } from '../../fixtures/memory-adapter.js';
import { startTelegramStandIn, type TelegramStandIn } from '../../fixtures/telegram-standin.js';

let standIn: TelegramStandIn;
let root: string;
afterEach(async () => {
  await standIn?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

function context(yaml: string): DaemonContext {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-msgsvc-'));
  const layout = homeLayout(root);
  ensureHomeDirs(layout);
  fs.mkdirSync(layout.profileDir('default'), { recursive: true });
  const { config } = parseConfig(yaml, layout.configFile);
  return {
    layout,
    config,
    configFile: layout.configFile,
    logger: createLogger({ file: layout.logFile }),
    advertise: (fields: { adapters?: unknown[] }) => {
      if (fields.adapters !== undefined) advertised.push(fields.adapters);
    },
  } as unknown as DaemonContext;
}

/** Every `adapters` list the service advertised to the daemon (for gateway.json), in order. */
const advertised: unknown[][] = [];

describe('platforms.telegram config and the messaging daemon service (REC-6)', () => {
  it('runs the Telegram gateway from config and drains to a clean-shutdown marker', async () => {
    standIn = await startTelegramStandIn();
    const ctx = context(
      `platforms:\n  telegram:\n    token_env: TG_TOKEN\n    api_root: ${standIn.apiRoot}\n    allowed_user_ids: [111]\n`,
    );
    expect(ctx.config.platforms.telegram).toMatchObject({ allowed_user_ids: ['111'], redact_pii: false });
    const service = messagingService({ env: { TG_TOKEN: standIn.token } });
    await service.start(ctx);
    // The adapters connect in the background once the service started.
    await expect.poll(() => service.adapterStatuses().every((a) => a.state === 'running')).toBe(true);
    const running = {
      platform: 'telegram',
      state: 'running',
      detail: null,
      account: '@gatehouse_bot',
      mode: 'polling',
    };
    expect(service.adapterStatuses()).toEqual([running]);
    // The daemon was told each state change, so `gatehouse status` can show it.
    expect(advertised.at(-1)).toEqual([running]);
    standIn.inject({ chat: { id: 111, type: 'private' }, from: { id: 111, first_name: 'A' }, text: 'ping' });
    await standIn.waitForCall(
      (c) => c.method === 'sendMessage' && /you said: ping/.test(String(c.payload.text)),
    );
    await service.drain(Date.now() + 5000);
    expect(advertised.at(-1)).toEqual([{ ...running, state: 'stopped' }]);
    await service.stop();
    const store = SqliteSessionStore.open(ctx.layout.stateDb('default'));
    const marker = store.db.prepare(`SELECT value FROM messaging_state WHERE name = 'clean_shutdown'`).get();
    await store.close();
    expect(marker).toBeDefined();
    // What the chats' recovery decided at the start is in the log (a fresh home: nothing to resume).
    await expect
      .poll(() => fs.readFileSync(ctx.layout.logFile, 'utf8'))
      .toMatch(/"clean_shutdown":false,"resumed":\[\],.*"msg":"chat recovery done"/);
  });

  it('does nothing without platforms.telegram, and names the missing token variable', async () => {
    standIn = await startTelegramStandIn();
    const idle = messagingService({ env: {} });
    await idle.start(context(''));
    expect(idle.adapterStatuses()).toEqual([]);
    await idle.stop();
    fs.rmSync(root, { recursive: true, force: true });
    const missing = messagingService({ env: {} });
    await expect(missing.start(context('platforms:\n  telegram: {}\n'))).rejects.toThrow(
      /TELEGRAM_BOT_TOKEN/,
    );
  });

  it("fails the start with a factory's refusal as service_failed, its message naming the platform once", async () => {
    standIn = await startTelegramStandIn();
    const missing = messagingService({ env: {} });
    await expect(missing.start(context('platforms:\n  telegram: {}\n'))).rejects.toMatchObject({
      name: 'DaemonError',
      code: 'service_failed',
      message:
        'telegram: the environment variable TELEGRAM_BOT_TOKEN (platforms.telegram.token_env) holding the bot token is not set',
    });
  });

  it('refuses a bad platforms.telegram key with its path', () => {
    expect(() => context('platforms:\n  telegram:\n    allowed_user_ids: [alice]\n')).toThrow(
      /platforms\.telegram\.allowed_user_ids/,
    );
    expect(() => context('platforms:\n  telegram:\n    token: "123:abc"\n')).toThrow(/token/);
    // Any name may be a section (a plugin's platform), but a section is a mapping.
    expect(() => context('platforms:\n  irc: 3\n')).toThrow(/platforms\.irc: .*expected object/);
  });
});

describe('platforms from configuration, through the platform registry', () => {
  it('builds an adapter for every enabled section: a plugin platform next to Telegram, each with its options', async () => {
    standIn = await startTelegramStandIn();
    const registry = builtinPlatforms();
    const sections: PlatformConfig['section'][] = [];
    let echoroom: MemoryAdapter | null = null;
    registry.register<PlatformConfig>('echoroom', (config) => {
      sections.push(config.section);
      echoroom = new MemoryAdapter('echoroom', true);
      return echoroom;
    });
    const ctx = context(
      [
        'platforms:',
        '  telegram:',
        '    token_env: TG_TOKEN',
        `    api_root: ${standIn.apiRoot}`,
        '  echoroom:',
        '    room: lobby',
        '    group_sessions_per_user: false',
        '  offline:',
        '    enabled: false',
        '',
      ].join('\n'),
    );
    const service = messagingService({ env: { TG_TOKEN: standIn.token }, registry });
    await service.start(ctx);
    // The adapters connect in the background once the service started.
    await expect.poll(() => service.adapterStatuses().every((a) => a.state === 'running')).toBe(true);
    try {
      expect(service.adapterStatuses().map((s) => [s.platform, s.state])).toEqual([
        ['telegram', 'running'],
        ['echoroom', 'running'],
      ]);
      // The plugin's own keys reached its factory, with the shared keys' defaults.
      expect(sections).toEqual([
        {
          enabled: true,
          redact_pii: false,
          during_turn: 'queue',
          group_sessions_per_user: false,
          room: 'lobby',
        },
      ]);
      // Its section's group_sessions_per_user: false makes one session of the room for both members.
      const keys: string[] = [];
      service.gateway()!.events.on('inbound:accepted', (e) => keys.push(e.session_key));
      const room = { chat_id: 'lobby', chat_type: 'group' as const };
      const answered = service.gateway()!.events.next('delivery:sent');
      echoroom!.receive({ ...room, user_id: 'u1', message_id: '1' }, 'hi from one');
      await answered;
      const second = service.gateway()!.events.next('delivery:sent');
      echoroom!.receive({ ...room, user_id: 'u2', message_id: '2' }, 'hi from two');
      await second;
      expect(keys).toHaveLength(2);
      expect(keys[0]).toBe(keys[1]);
    } finally {
      await service.drain(Date.now() + 5000);
      await service.stop();
    }
  });

  it('refuses an unknown platform name with a config error that names the known platforms', async () => {
    standIn = await startTelegramStandIn();
    const service = messagingService({ env: { TG_TOKEN: standIn.token } });
    const ctx = context(
      `platforms:\n  telegram:\n    token_env: TG_TOKEN\n  telegarm:\n    token_env: TG_TOKEN\n`,
    );
    const failure = service.start(ctx);
    await expect(failure).rejects.toMatchObject({ code: 'config_invalid' });
    await expect(failure).rejects.toThrow(
      /platforms\.telegarm: there is no chat platform named "telegarm" \(known: telegram, discord, slack\)/,
    );
    // Nothing was started or opened: no adapter polled Telegram.
    expect(standIn.calls).toEqual([]);
    expect(service.adapterStatuses()).toEqual([]);
  });
});

describe('the runtime the messaging service runs on', () => {
  it("runs on the runtime it is handed (the daemon's one): its chat broker and model, nothing of its own", async () => {
    standIn = await startTelegramStandIn();
    const model = await startDemoModel();
    const ctx = context(
      `model:\n  base_url: ${model.baseUrl}\n  model: shared-model\nplatforms:\n  echoroom: {}\n`,
    );
    const runtime = await startRuntime({
      config: ctx.config,
      env: {},
      profileDir: ctx.layout.profileDir('default'),
    });
    const registry = builtinPlatforms();
    let echoroom: MemoryAdapter | null = null;
    registry.register<PlatformConfig>('echoroom', () => (echoroom = new MemoryAdapter('echoroom', true)));
    const registered: (PromptBroker | null)[] = [];
    const service = messagingService({
      env: {},
      registry,
      runtime: () => runtime,
      platformPrompts: (broker) => registered.push(broker),
    });
    try {
      await service.start(ctx);
      // The broker operators answer chat prompts through is the runtime's chat broker.
      expect(registered).toHaveLength(1);
      expect(registered[0]).toBe(runtime.chatPrompts);
      const answered = service.gateway()!.events.next('delivery:sent');
      echoroom!.receive({ chat_id: 'c1', chat_type: 'dm', user_id: 'u1', message_id: '1' }, 'hello');
      expect((await answered).delivery.text).toMatch(/you said: hello/);
      // The turn ran on the runtime's model: the configured one, reached through its client.
      expect(new Set(model.requests.map((r) => (r.body as { model?: string } | null)?.model))).toEqual(
        new Set(['shared-model']),
      );
    } finally {
      await service.drain(Date.now() + 5000);
      await service.stop();
      await runtime.close();
      await model.close();
    }
    expect(registered.at(-1)).toBeNull();
    // Promised a runtime that is not there, the service refuses to start instead of building its own.
    const orphan = messagingService({ env: {}, registry, runtime: () => null });
    await expect(orphan.start(ctx)).rejects.toMatchObject({ code: 'service_failed' });
    await orphan.stop();
  });
});
