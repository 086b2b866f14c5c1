/**
 * Photos, documents and voice notes sent to the bot (docs/messaging.md, "Attachments").
 *
 * The file is fetched from the Bot API before the message is handed to the gateway, and stored
 * owner-only in the platform's attachments folder under its `file_unique_id` (Telegram's stable id
 * of the file's content), so a message Telegram delivers again after a crash stores the same file
 * once. The model is told in text what was attached and where it lies (the path is inside the
 * profile folder the agent's tools run in); a model that takes images is not sent the bytes.
 *
 * The pure parts (which attachment a message carries, what the model and the user are told) are
 * separate from the fetch, which streams the body and stops at the size limit.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { chmod, rename, rm, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Message } from 'grammy/types';

export type AttachmentKind = 'photo' | 'document' | 'voice';

export interface TelegramAttachment {
  readonly kind: AttachmentKind;
  readonly file_id: string;
  readonly file_unique_id: string;
  /** As Telegram reports it; absent when it did not say. */
  readonly file_size: number | null;
  readonly file_name: string | null;
  readonly mime_type: string | null;
  /** Photos: the pixel size of the size taken. */
  readonly width: number | null;
  readonly height: number | null;
  /** Voice notes: seconds. */
  readonly duration: number | null;
}

/**
 * The attachment a message carries, or null. Of a photo's sizes the largest that fits `maxBytes`
 * is taken (the smallest when none fits, so the refusal names a real size).
 */
export function attachmentOf(message: Message, maxBytes: number): TelegramAttachment | null {
  const base = { file_name: null, mime_type: null, width: null, height: null, duration: null };
  if (message.photo !== undefined && message.photo.length > 0) {
    const sizes = [...message.photo].sort((a, b) => a.width * a.height - b.width * b.height);
    const fitting = sizes.filter((p) => (p.file_size ?? 0) <= maxBytes);
    const photo = fitting.at(-1) ?? sizes[0]!;
    return {
      ...base,
      kind: 'photo',
      file_id: photo.file_id,
      file_unique_id: photo.file_unique_id,
      file_size: photo.file_size ?? null,
      width: photo.width,
      height: photo.height,
      mime_type: 'image/jpeg',
    };
  }
  if (message.document !== undefined) {
    const d = message.document;
    return {
      ...base,
      kind: 'document',
      file_id: d.file_id,
      file_unique_id: d.file_unique_id,
      file_size: d.file_size ?? null,
      file_name: d.file_name ?? null,
      mime_type: d.mime_type ?? null,
    };
  }
  if (message.voice !== undefined) {
    const v = message.voice;
    return {
      ...base,
      kind: 'voice',
      file_id: v.file_id,
      file_unique_id: v.file_unique_id,
      file_size: v.file_size ?? null,
      mime_type: v.mime_type ?? 'audio/ogg',
      duration: v.duration,
    };
  }
  return null;
}

/** Where the attachment is stored: its content id plus an extension from its name or Telegram's path. */
export function storedName(attachment: TelegramAttachment, telegramPath: string | null): string {
  const fromName = attachment.file_name === null ? '' : extname(attachment.file_name);
  const fromPath = telegramPath === null ? '' : extname(telegramPath);
  const fallback = { photo: '.jpg', voice: '.ogg', document: '' }[attachment.kind];
  const ext = (fromName || fromPath || fallback).toLowerCase();
  // file_unique_id is base64url; the extension is cut to what a file name safely holds.
  const safeExt = /^\.[a-z0-9]{1,10}$/.test(ext) ? ext : '';
  return `${attachment.file_unique_id.replace(/[^A-Za-z0-9_-]/g, '_')}${safeExt}`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** The line the model reads in place of the file; the caption (if any) follows it. */
export function describeStored(attachment: TelegramAttachment, path: string, bytes: number): string {
  const facts: string[] = [];
  if (attachment.kind === 'photo' && attachment.width !== null) {
    facts.push(`${attachment.width}x${attachment.height}`);
  }
  if (attachment.kind === 'voice' && attachment.duration !== null) facts.push(`${attachment.duration} s`);
  if (attachment.file_name !== null) facts.push(`"${attachment.file_name}"`);
  if (attachment.mime_type !== null) facts.push(attachment.mime_type);
  facts.push(formatBytes(bytes));
  const what = { photo: 'a photo', document: 'a document', voice: 'a voice note' }[attachment.kind];
  return `[The user sent ${what} (${facts.join(', ')}), saved at ${path}]`;
}

/** The line the model reads when the file could not be fetched: the message is not dropped. */
export function describeUnfetched(attachment: TelegramAttachment, reason: string): string {
  const what = { photo: 'a photo', document: 'a document', voice: 'a voice note' }[attachment.kind];
  return `[The user sent ${what} that could not be fetched from Telegram: ${reason}]`;
}

/** The reply to a file over the limit; the message is not handed to the agent. */
export function tooLargeReply(attachment: TelegramAttachment, bytes: number, maxBytes: number): string {
  const what = { photo: 'That photo', document: 'That document', voice: 'That voice note' }[attachment.kind];
  return `${what} is ${formatBytes(bytes)}; this gateway accepts attachments up to ${formatBytes(maxBytes)}. Send a smaller file, or a link to it.`;
}

export class AttachmentTooLarge extends Error {
  constructor(readonly bytes: number) {
    super(`the file is larger than the limit (${formatBytes(bytes)} read so far)`);
  }
}

/**
 * Streams `url` into `dir/name` (owner-only), through a temporary file renamed into place, so a
 * crash never leaves half a file under the final name. Stops with AttachmentTooLarge past `maxBytes`.
 * Resolves with the stored path and its size. A file already stored under that name (the same
 * content, delivered again) is kept.
 */
export async function fetchToFile(
  url: string,
  dir: string,
  name: string,
  maxBytes: number,
  signal?: AbortSignal,
): Promise<{ path: string; bytes: number }> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const path = join(dir, name);
  const existing = await stat(path).catch(() => null);
  if (existing !== null) return { path, bytes: existing.size };
  const response = await fetch(url, signal === undefined ? {} : { signal });
  if (!response.ok || response.body === null) {
    throw new Error(`the Bot API answered HTTP ${response.status} for the file`);
  }
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) throw new AttachmentTooLarge(declared);
  const temp = join(dir, `.${randomUUID()}.part`);
  let bytes = 0;
  const cap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      done(bytes > maxBytes ? new AttachmentTooLarge(bytes) : null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(response.body), cap, createWriteStream(temp, { mode: 0o600 }));
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  return { path, bytes };
}
