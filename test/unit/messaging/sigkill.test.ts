/** The messaging gateway in a real child process, killed with SIGKILL mid-turn (REC-4). */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoModel, type DemoModelServer } from '../../../src/runtime/demo/server.js';
import { buildPlainJs } from '../../shared/plain-js.js';
import { startTelegramStandIn, type TelegramStandIn } from '../../fixtures/telegram-standin.js';
import { DEMO_LABEL } from '../../../src/runtime/demo/script.js';
import { resumedNotice } from '../../../src/domain/messaging/turn.js';

let js: ReturnType<typeof buildPlainJs>;
let dir: string;
let standIn: TelegramStandIn;
let model: DemoModelServer;

beforeAll(async () => {
  js = buildPlainJs();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-msgkill-'));
  standIn = await startTelegramStandIn();
  model = await startDemoModel();
}, 120_000); // transpiling all of src/: seconds alone, far longer on a loaded machine

afterAll(async () => {
  model.release();
  await standIn.close();
  await model.close();
  js.cleanup();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Starts the gateway child; resolves with it and its recovery report once it printed `ready`. */
async function startChild(): Promise<{ child: ChildProcess; recovery: Record<string, unknown> }> {
  const child = spawn(
    process.execPath,
    [
      js.fixture('messaging-child.ts'),
      path.join(dir, 'state.db'),
      standIn.apiRoot,
      standIn.token,
      model.baseUrl,
      dir,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines = readline.createInterface({ input: child.stdout });
  let recovery: Record<string, unknown> = {};
  for await (const line of lines) {
    if (line.startsWith('recovery '))
      recovery = JSON.parse(line.slice('recovery '.length)) as Record<string, unknown>;
    if (line === 'ready') break;
  }
  return { child, recovery };
}

function kill(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  return exited;
}

const CHAT = { id: 555, type: 'private' as const };
const USER = { id: 555, first_name: 'Kim' };
const replies = () => standIn.sent((c) => c.payload.chat_id === CHAT.id).map((c) => String(c.payload.text));

describe('REC-4 SIGKILL mid-turn', () => {
  it('resumes the interrupted turn once after restart and one reply reaches the chat', async () => {
    const first = await startChild();
    model.hold();
    const update = standIn.inject({ chat: CHAT, from: USER, text: 'hello before the crash' });
    await model.waitForRequests(1);
    await standIn.waitForConfirmed(update);
    await kill(first.child);
    expect(replies()).toEqual([]);
    model.release();

    const second = await startChild();
    expect(second.recovery).toMatchObject({ cleanShutdown: false, resumed: ['agent:main:telegram:dm:555'] });
    await standIn.waitForCall((c) => c.method === 'sendMessage' && c.payload.chat_id === CHAT.id, 2);
    // REC-7: told it resumed, then the one reply; the model was called again with exactly the
    // stored history (the interrupted request's messages, no restart note).
    expect(replies()).toEqual([
      resumedNotice('model', false),
      `${DEMO_LABEL}: you said: hello before the crash`,
    ]);
    expect(model.requests.at(-1)!.body!.messages).toEqual(model.requests[0]!.body!.messages);

    // A graceful stop then a start: nothing is sent again.
    const stopped = new Promise<void>((resolve) => second.child.once('exit', () => resolve()));
    second.child.kill('SIGTERM');
    await stopped;
    const third = await startChild();
    expect(third.recovery).toMatchObject({ cleanShutdown: true, resumed: [], delivered: 0 });
    await kill(third.child);
    expect(replies()).toHaveLength(2);
    // Three starts of the gateway child, each loading the messaging stack: a few seconds alone,
    // far longer on a 2-core machine running other test files beside this one.
  }, 120_000);
});
