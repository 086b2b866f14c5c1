import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/daemon/config.js';
import type { DaemonContext } from '../../../src/daemon/daemon.js';
import { ensureHomeDirs, homeLayout } from '../../../src/daemon/home.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { messagingService } from '../../../src/surfaces/platforms/service.js';
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

  it('refuses a bad platforms.telegram key with its path', () => {
    expect(() => context('platforms:\n  telegram:\n    allowed_user_ids: [alice]\n')).toThrow(
      /platforms\.telegram\.allowed_user_ids/,
    );
    expect(() => context('platforms:\n  telegram:\n    token: "123:abc"\n')).toThrow(/token/);
  });
});
