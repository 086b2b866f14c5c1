/**
 * Telegram in webhook mode and with attachments, through the real daemon (`gatehouse serve` as a
 * child process): the Bot API stand-in posts updates to the daemon's webhook listener with the
 * secret-token header, as Telegram does, and keeps each until it is answered 2xx. A photo reaches
 * the model as a description with the path of the stored file; a file over the limit is refused
 * with a reply; an update posted while the daemon is SIGKILLed is answered once after the restart.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { unhandedPort } from '../shared/ports.js';
import { runCli } from './cli.js';
import { useTelegramDaemon } from './telegram-fixture.js';

const SECRET_ENV = 'GH_E2E_TELEGRAM_WEBHOOK_SECRET';
const SECRET = 'e2e-webhook-secret-0123456789';
let port = 0;

beforeAll(async () => {
  port = await unhandedPort();
});

const tg = useTelegramDaemon({
  telegramYaml: () => [
    '    mode: webhook',
    '    max_attachment_mb: 0.05',
    '    webhook:',
    `      url: http://127.0.0.1:${port}/telegram`,
    `      secret_token_env: ${SECRET_ENV}`,
    `      port: ${port}`,
  ],
});

const DM = { id: 7001, type: 'private' as const };
const LEE = { id: 7001, first_name: 'Lee' };

describe('Telegram webhook mode and attachments through the real daemon', () => {
  it('sets the webhook with the secret, answers a DM once, and says webhook in gatehouse status', async () => {
    await tg.start({ [SECRET_ENV]: SECRET });
    expect(tg.standIn.webhook()).toEqual({ url: `http://127.0.0.1:${port}/telegram`, secret_token: SECRET });
    expect(await tg.ask(DM, LEE, 'hello by webhook')).toMatch(/you said: hello by webhook/);
    expect(tg.repliesTo(DM.id).filter((t) => t.includes('hello by webhook'))).toHaveLength(1);
    const status = await runCli(tg.home, ['status']);
    expect(status.stdout).toContain('telegram: webhook as @gatehouse_bot');
    // The secret is in no file of the home.
    const log = readFileSync(join(tg.home, 'logs', 'gateway.log'), 'utf8');
    expect(log).not.toContain(SECRET);
    expect(readFileSync(join(tg.home, 'run', 'gateway.json'), 'utf8')).not.toContain(SECRET);
  });

  it('a photo reaches the model as a description of the stored file, with its caption', async () => {
    const bytes = randomBytes(30_000);
    const file = tg.standIn.addFile(bytes, 'photos/file_1.jpg');
    const before = tg.sentTo(DM.id).length;
    tg.standIn.inject({
      chat: DM,
      from: LEE,
      caption: 'photo-marker: what is this?',
      photo: { ...file, width: 640, height: 480 },
    });
    await tg.standIn.waitForCall(
      (c) => c.method === 'sendMessage' && c.payload.chat_id === DM.id,
      before + 1,
    );
    // Outside the home, where the chats' tools may read it (docs/tool-reach.md).
    const stored = join(`${tg.home}-workspaces`, 'telegram', '.attachments', `${file.file_unique_id}.jpg`);
    const users = tg.userMessages('photo-marker');
    expect(users.at(-1)).toBe(
      `[The user sent a photo (640x480, image/jpeg, 29 KB), saved at ${stored}]\nphoto-marker: what is this?`,
    );
    expect(readFileSync(stored).equals(bytes)).toBe(true);
    expect(statSync(stored).mode & 0o777).toBe(0o600);
  });

  it('a document over max_attachment_mb is refused with a reply and never reaches the model', async () => {
    const file = tg.standIn.addFile(randomBytes(80_000), 'documents/file_2.pdf');
    const requests = tg.model.requests.length;
    const update = tg.standIn.inject({
      chat: DM,
      from: LEE,
      caption: 'big-doc-marker',
      document: { ...file, file_name: 'report.pdf', mime_type: 'application/pdf' },
    });
    expect(await tg.waitForText(DM.id, /^That document is 78 KB/)).toBe(
      'That document is 78 KB; this gateway accepts attachments up to 51 KB. Send a smaller file, or a link to it.',
    );
    expect(tg.model.requests.length).toBe(requests);
    expect(JSON.stringify(tg.model.requests)).not.toContain('big-doc-marker');
    // Answered 2xx once the reply went out (the reply can be seen a moment before that answer).
    await tg.standIn.waitForConfirmed(update);
  });

  it('an update Telegram posts while the daemon is down (SIGKILL) is answered once after the restart', async () => {
    await tg.kill();
    const update = tg.standIn.inject({ chat: DM, from: LEE, text: 'sent-while-down' });
    await expect
      .poll(() => tg.standIn.webhookPosts.some((p) => p.update_id === update && p.status === 0), {
        timeout: 30_000,
      })
      .toBe(true);
    await tg.start({ [SECRET_ENV]: SECRET });
    await tg.standIn.waitForConfirmed(update);
    expect(await tg.waitForText(DM.id, /you said: sent-while-down/)).toMatch(/sent-while-down/);
    // Delivered again after it was answered (as Telegram may): not answered twice.
    tg.standIn.redeliver(update);
    expect(await tg.ask(DM, LEE, 'after-redelivery')).toMatch(/after-redelivery/);
    expect(tg.repliesTo(DM.id).filter((t) => t.includes('sent-while-down'))).toHaveLength(1);
  });

  it('refuses to start without the webhook secret, naming the variable', async () => {
    await tg.stop();
    const run = await runCli(tg.home, ['serve'], { env: { GH_E2E_TELEGRAM_TOKEN: tg.standIn.token } });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(
      `the environment variable ${SECRET_ENV} (platforms.telegram.webhook.secret_token_env)`,
    );
  });
});
