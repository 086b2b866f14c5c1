/**
 * Photos, documents and voice notes sent to the Telegram adapter, against the Bot API stand-in:
 * stored owner-only byte for byte under their content id, described to the model with the caption,
 * a file over the limit refused with a reply (nothing handed in), a fetch that fails still handed
 * in saying so, and a redelivered message storing its file once.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { MessageEvent } from '../../../src/domain/messaging/adapter.js';
import {
  attachmentOf,
  describeStored,
  storedName,
} from '../../../src/surfaces/platforms/telegram/attachments.js';
import { TelegramAdapter } from '../../../src/surfaces/platforms/telegram/adapter.js';
import { ALICE, dmWith } from '../../fixtures/messaging-harness.js';
import { startTelegramStandIn, type TelegramStandIn } from '../../fixtures/telegram-standin.js';

let standIn: TelegramStandIn | undefined;
let adapter: TelegramAdapter | undefined;
afterEach(async () => {
  await adapter?.stop();
  await standIn?.close();
});

async function started(maxAttachmentBytes?: number) {
  standIn = await startTelegramStandIn();
  const dir = join(mkdtempSync(join(tmpdir(), 'gh-attach-')), 'attachments', 'telegram');
  adapter = new TelegramAdapter({
    token: standIn.token,
    apiRoot: standIn.apiRoot,
    pollTimeoutSeconds: 1,
    attachmentsDir: dir,
    ...(maxAttachmentBytes === undefined ? {} : { maxAttachmentBytes }),
  });
  const handedIn: MessageEvent[] = [];
  await adapter.start((event) => {
    handedIn.push(event);
    return Promise.resolve();
  });
  return { s: standIn, dir, handedIn };
}

describe('Telegram attachments', () => {
  it('stores a photo owner-only, byte for byte, and tells the model what and where it is, with the caption', async () => {
    const { s, dir, handedIn } = await started();
    const bytes = randomBytes(40_000);
    const file = s.addFile(bytes, 'photos/file_7.jpg');
    s.inject({
      chat: dmWith(ALICE),
      from: ALICE,
      caption: 'what is in this picture?',
      photo: { ...file, width: 800, height: 600 },
    });
    await expect.poll(() => handedIn.length).toBe(1);
    const stored = join(dir, `${file.file_unique_id}.jpg`);
    expect(handedIn[0]!.text).toBe(
      `[The user sent a photo (800x600, image/jpeg, 39 KB), saved at ${stored}]\nwhat is in this picture?`,
    );
    expect(readFileSync(stored).equals(bytes)).toBe(true);
    expect(statSync(stored).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readdirSync(dir)).toEqual([`${file.file_unique_id}.jpg`]); // no temp file left
  });

  it('describes a document by name and type, and a voice note by its length', async () => {
    const { s, dir, handedIn } = await started();
    const doc = s.addFile(Buffer.from('id,name\n1,x\n'), 'documents/file_8.csv');
    s.inject({
      chat: dmWith(ALICE),
      from: ALICE,
      document: { ...doc, file_name: 'people.csv', mime_type: 'text/csv' },
    });
    const voice = s.addFile(randomBytes(3000), 'voice/file_9.oga');
    s.inject({ chat: dmWith(ALICE), from: ALICE, voice: { ...voice, duration: 4 } });
    await expect.poll(() => handedIn.length).toBe(2);
    expect(handedIn[0]!.text).toBe(
      `[The user sent a document ("people.csv", text/csv, 12 B), saved at ${join(dir, `${doc.file_unique_id}.csv`)}]`,
    );
    expect(handedIn[1]!.text).toBe(
      `[The user sent a voice note (4 s, audio/ogg, 3 KB), saved at ${join(dir, `${voice.file_unique_id}.oga`)}]`,
    );
  });

  it('a text sent after a large photo in one batch still reaches the session after it', async () => {
    const { s, handedIn } = await started();
    const file = s.addFile(randomBytes(2_000_000), 'photos/file_big.jpg');
    s.inject({ chat: dmWith(ALICE), from: ALICE, caption: 'first', photo: { ...file, width: 9, height: 9 } });
    s.inject({ chat: dmWith(ALICE), from: ALICE, text: 'second' });
    await expect.poll(() => handedIn.length).toBe(2);
    expect(handedIn.map((e) => e.text.split('\n').at(-1))).toEqual(['first', 'second']);
  });

  it('refuses a file over the limit with a reply naming both sizes, and hands nothing in', async () => {
    const { s, dir, handedIn } = await started(10_000);
    const file = s.addFile(randomBytes(25_000), 'documents/big.bin');
    const update = s.inject({
      chat: dmWith(ALICE),
      from: ALICE,
      caption: 'please read',
      document: { ...file, file_name: 'big.bin', mime_type: 'application/octet-stream' },
    });
    const reply = await s.waitForCall((c) => c.method === 'sendMessage');
    expect(reply.payload.text).toBe(
      'That document is 24 KB; this gateway accepts attachments up to 10 KB. Send a smaller file, or a link to it.',
    );
    expect(reply.payload.reply_parameters).toMatchObject({ message_id: Number(s.messageId(update)) });
    await s.waitForConfirmed(update);
    expect(handedIn).toEqual([]);
    expect(() => readdirSync(dir)).toThrow(); // nothing stored
  });

  it('stops reading a download past the limit when Telegram did not say the size', async () => {
    const { s, dir, handedIn } = await started(10_000);
    const file = s.addFile(randomBytes(25_000), 'documents/unsized.bin');
    const { file_size: _unsaid, ...unsized } = file;
    s.inject({
      chat: dmWith(ALICE),
      from: ALICE,
      document: {
        ...(unsized as typeof file),
        file_name: 'unsized.bin',
        mime_type: 'application/octet-stream',
      },
    });
    const reply = await s.waitForCall((c) => c.method === 'sendMessage');
    expect(String(reply.payload.text)).toMatch(
      /^That document is 2\d KB; this gateway accepts attachments up to 10 KB/,
    );
    expect(handedIn).toEqual([]);
    expect(readdirSync(dir)).toEqual([]); // the partial file was removed
  });

  it('hands a message in even when its file cannot be fetched, saying so', async () => {
    const { s, handedIn } = await started();
    s.inject({
      chat: dmWith(ALICE),
      from: ALICE,
      caption: 'see attached',
      document: {
        file_id: 'gone',
        file_unique_id: 'gone-u',
        file_size: 10,
        file_name: 'a.txt',
        mime_type: 'text/plain',
      },
    });
    await expect.poll(() => handedIn.length).toBe(1);
    expect(handedIn[0]!.text).toMatch(
      /^\[The user sent a document that could not be fetched from Telegram: .*invalid file_id.*\]\nsee attached$/,
    );
    expect(handedIn[0]!.text).not.toContain(s.token);
  });

  it('a message delivered again stores its file once', async () => {
    const { s, dir, handedIn } = await started();
    const file = s.addFile(randomBytes(5000), 'photos/again.jpg');
    const update = s.inject({ chat: dmWith(ALICE), from: ALICE, photo: { ...file, width: 10, height: 10 } });
    await expect.poll(() => handedIn.length).toBe(1);
    await s.waitForConfirmed(update);
    s.redeliver(update);
    await expect.poll(() => handedIn.length).toBe(2);
    expect(handedIn[1]!.text).toBe(handedIn[0]!.text);
    expect(readdirSync(dir)).toEqual([`${file.file_unique_id}.jpg`]);
    expect(s.calls.filter((c) => c.method === 'getFile')).toHaveLength(2);
  });
});

describe('attachment naming (pure)', () => {
  const base = { file_id: 'f', file_size: 1, width: null, height: null, duration: null, mime_type: null };
  it('keeps a safe extension and never a path from the name', () => {
    const doc = {
      ...base,
      kind: 'document' as const,
      file_unique_id: 'AQAD/../x',
      file_name: '../../etc/passwd',
    };
    expect(storedName(doc, 'documents/file_1')).toBe('AQAD____x');
    expect(storedName({ ...doc, file_name: 'notes.MD' }, null)).toBe('AQAD____x.md');
    expect(storedName({ ...doc, file_name: 'x.a$b' }, null)).toBe('AQAD____x');
  });
  it('takes the largest photo size that fits the limit', () => {
    const message = {
      photo: [
        { file_id: 'small', file_unique_id: 's', width: 90, height: 90, file_size: 1_000 },
        { file_id: 'large', file_unique_id: 'l', width: 1280, height: 960, file_size: 900_000 },
        { file_id: 'mid', file_unique_id: 'm', width: 320, height: 240, file_size: 20_000 },
      ],
    } as unknown as Parameters<typeof attachmentOf>[0];
    expect(attachmentOf(message, 1_000_000)!.file_id).toBe('large');
    expect(attachmentOf(message, 100_000)!.file_id).toBe('mid');
    expect(attachmentOf(message, 10)!.file_id).toBe('small');
  });
  it('describes sizes readably', () => {
    const photo = {
      ...base,
      kind: 'photo' as const,
      file_unique_id: 'p',
      file_name: null,
      width: 2,
      height: 3,
    };
    expect(describeStored(photo, '/x.jpg', 3 * 1024 * 1024)).toBe(
      '[The user sent a photo (2x3, 3.0 MB), saved at /x.jpg]',
    );
  });
});
