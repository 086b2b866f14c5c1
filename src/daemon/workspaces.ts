/**
 * Where chat-platform sessions run their tools (issue 25 item 5, docs/tool-reach.md): a folder per
 * chat in `<home>-workspaces/<platform>/<chat id>`, beside the home and never inside it, so no chat
 * works next to `state.db` or `config.yaml`. Created owner-only (0700) when a turn first needs it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { makeDirs } from './dirs.js';

export function workspacesRoot(homeRoot: string): string {
  return `${path.resolve(homeRoot)}-workspaces`;
}

/** A chat id or platform name as one folder name: anything but letters, digits, `_`, `-` is %XX. */
function folderName(id: string): string {
  const safe = [...Buffer.from(id, 'utf8')]
    .map((byte) => {
      const c = String.fromCharCode(byte);
      return /[A-Za-z0-9_-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');
  return safe === '' ? '%' : safe.slice(0, 200);
}

/**
 * Where a platform's adapter stores the files chats send (`.attachments`: no chat's folder can be
 * named so, a `.` being written %2E), beside the chats' workspaces so their tools can read them.
 */
export function platformAttachments(homeRoot: string, platform: string): string {
  return path.join(workspacesRoot(homeRoot), folderName(platform), '.attachments');
}

/** The workspace of one chat, created (with its parents) owner-only. */
export function chatWorkspace(homeRoot: string, platform: string, chatId: string): string {
  const dir = path.join(workspacesRoot(homeRoot), folderName(platform), folderName(chatId));
  makeDirs(dir, 0o700);
  fs.chmodSync(dir, 0o700);
  return dir;
}
