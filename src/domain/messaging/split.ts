/**
 * Splitting a long reply into platform-sized messages (Telegram: 4096). Cuts prefer a paragraph
 * break, then a line break, then a space; a cut never separates a UTF-16 surrogate pair. A cut
 * inside a ``` code fence closes the fence at the end of the piece and reopens it (with its
 * language tag) at the start of the next, so each message renders as code on its own.
 */

const FENCE = /^```(\S*)\s*$/;

export function splitMessage(text: string, limit: number): string[] {
  if (limit < 16) throw new Error('splitMessage: limit must be at least 16');
  const pieces: string[] = [];
  let rest = text;
  let reopen = '';
  while (reopen.length + rest.length > limit) {
    const body = reopen + rest;
    // Room for a closing fence in case the cut lands inside one.
    const { cut, skip } = bestCut(body, limit - 4, reopen.length);
    const head = body.slice(0, cut);
    const open = openFence(head);
    pieces.push(open === null ? head : `${head.replace(/\n?$/, '\n')}\`\`\``);
    rest = body.slice(cut + skip);
    reopen = open === null ? '' : `\`\`\`${open}\n`;
  }
  const last = reopen + rest;
  if (last.trim() !== '' || pieces.length === 0) pieces.push(last);
  return pieces;
}

/** Where to cut, and how many separator characters the cut swallows. */
function bestCut(body: string, room: number, minimum: number): { cut: number; skip: number } {
  const window = body.slice(0, room);
  const floor = Math.max(minimum + 1, Math.floor(room / 2));
  for (const separator of ['\n\n', '\n', ' ']) {
    const at = window.lastIndexOf(separator);
    if (at >= floor) return { cut: at, skip: separator.length };
  }
  let cut = room;
  const code = body.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  return { cut, skip: 0 };
}

/** The language tag of a fence left open at the end of `text`, or null when all are closed. */
function openFence(text: string): string | null {
  let open: string | null = null;
  for (const line of text.split('\n')) {
    const match = FENCE.exec(line.trim());
    if (match === null) continue;
    open = open === null ? (match[1] ?? '') : null;
  }
  return open;
}
