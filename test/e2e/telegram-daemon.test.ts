/**
 * The Telegram adapter inside the real daemon (`gatehouse serve` as a child process): the Bot API
 * is the loopback stand-in, the model is the demo model over HTTP in this process, and the crash is
 * a real SIGKILL of the daemon mid-turn.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { startTelegramStandIn, type TelegramStandIn } from '../fixtures/telegram-standin.js';
import { requireBuild, runCli, tempHome } from './cli.js';
import { startDaemon, writeConfig, type RunningDaemon } from './gateway-harness.js';

const TOKEN_ENV = 'GH_E2E_TELEGRAM_TOKEN';

let standIn: TelegramStandIn;
let model: DemoModelServer;
let home: string;
let env: NodeJS.ProcessEnv;
let daemon: RunningDaemon | null = null;

beforeAll(async () => {
  requireBuild();
  standIn = await startTelegramStandIn();
  model = await startDemoModel();
  home = tempHome();
  env = { [TOKEN_ENV]: standIn.token };
  writeConfig(
    home,
    [
      'model:',
      `  base_url: ${model.baseUrl}`,
      '  model: gatehouse-demo',
      'platforms:',
      '  telegram:',
      `    token_env: ${TOKEN_ENV}`,
      `    api_root: ${standIn.apiRoot}`,
      '',
    ].join('\n'),
  );
});

afterAll(async () => {
  model.release();
  await daemon?.stop();
  await standIn.close();
  await model.close();
  fs.rmSync(home, { recursive: true, force: true });
});

const DM = { id: 555, type: 'private' as const };
const KIM = { id: 555, first_name: 'Kim' };
const GROUP = { id: -100777, type: 'supergroup' as const, title: 'Team' };
const ANN = { id: 11, first_name: 'Ann' };
const BOB = { id: 22, first_name: 'Bob' };

const repliesTo = (chatId: number) =>
  standIn.sent((c) => c.payload.chat_id === chatId).map((c) => String(c.payload.text));

/** Injects a message and resolves with the text of the reply it caused (the next one to that chat). */
async function ask(chat: typeof DM | typeof GROUP, from: typeof KIM, text: string): Promise<string> {
  const before = repliesTo(chat.id).length;
  standIn.inject({ chat, from, text });
  const call = await standIn.waitForCall(
    (c) => c.method === 'sendMessage' && c.payload.chat_id === chat.id,
    before + 1,
  );
  return String(call.payload.text);
}

/** Every text the model saw in the request that answered `marker` (the last request containing it). */
function requestTexts(marker: string): string {
  const request = [...model.requests]
    .reverse()
    .find((r) => JSON.stringify(r.body?.messages ?? []).includes(marker));
  if (request === undefined) throw new Error(`no model request carried "${marker}"`);
  return JSON.stringify(request.body!.messages);
}

describe('UX-1 SRC-1 Telegram through the real daemon', () => {
  it('answers a DM exactly once and reports the adapter in gatehouse status', async () => {
    daemon = await startDaemon({ home, env });
    expect(await ask(DM, KIM, 'hello gatehouse')).toMatch(/you said: hello gatehouse/);
    // A later message on the same chat is answered after the first: had the first been sent twice,
    // the duplicate would be in the list by now.
    expect(await ask(DM, KIM, 'second message')).toMatch(/you said: second message/);
    expect(repliesTo(DM.id).filter((t) => t.includes('hello gatehouse'))).toHaveLength(1);

    const json = await runCli(home, ['status', '--json']);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as { adapters: unknown[] };
    expect(report.adapters).toEqual([
      { platform: 'telegram', state: 'running', detail: null, account: '@gatehouse_bot' },
    ]);
    const text = await runCli(home, ['status']);
    expect(text.stdout).toContain('telegram: polling as @gatehouse_bot');
  });

  it('KEY-1 gives each user of a group a session of their own', async () => {
    expect(await ask(GROUP, ANN, 'alpha-secret from ann')).toMatch(/alpha-secret/);
    expect(await ask(GROUP, BOB, 'beta from bob')).toMatch(/beta from bob/);
    // Bob's turn did not see Ann's message; Ann's next turn still does (her session continued).
    expect(requestTexts('beta from bob')).not.toContain('alpha-secret');
    expect(await ask(GROUP, ANN, 'gamma from ann')).toMatch(/gamma from ann/);
    expect(requestTexts('gamma from ann')).toContain('alpha-secret');
  });

  it('QUE-2 /new starts a fresh conversation for the chat', async () => {
    expect(await ask(DM, KIM, '/new')).toBe('Started a new conversation.');
    expect(await ask(DM, KIM, 'fresh start')).toMatch(/you said: fresh start/);
    expect(requestTexts('fresh start')).not.toContain('hello gatehouse');
  });

  it('REC-4 resumes a turn cut by SIGKILL once after restart: one reply reaches the chat', async () => {
    const chat = { id: 556, type: 'private' as const };
    const user = { id: 556, first_name: 'Lee' };
    const seen = model.requests.length;
    model.hold();
    const update = standIn.inject({ chat, from: user, text: 'before the crash' });
    await model.waitForRequests(seen + 1);
    await standIn.waitForConfirmed(update); // Telegram will not hand it out again
    await daemon!.kill();
    daemon = null;
    expect(repliesTo(chat.id)).toEqual([]);

    daemon = await startDaemon({ home, env });
    model.release();
    await standIn.waitForCall((c) => c.method === 'sendMessage' && c.payload.chat_id === chat.id);
    expect(repliesTo(chat.id)).toHaveLength(1);
    expect(repliesTo(chat.id)[0]).toMatch(/Continue where you left off/);
    // The resumed request carried the interrupted message: the same conversation, continued.
    expect(requestTexts('Continue where you left off')).toContain('before the crash');

    // A graceful stop and another start send nothing again.
    expect(await daemon.stop()).toBe(0);
    daemon = await startDaemon({ home, env });
    expect(await ask(chat, user, 'after restarts')).toMatch(/after restarts/);
    expect(repliesTo(chat.id)).toHaveLength(2);
  });
});
