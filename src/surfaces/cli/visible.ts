/**
 * The screen tells the truth (issue 25, item 7): text that came from a model, a tool or the store is
 * made harmless before it reaches a terminal. A control character could otherwise move the cursor,
 * erase the real approval prompt and draw a harmless one, retitle the window, or reverse the order
 * of what is read (bidi overrides). Each is shown, visibly, instead of obeyed:
 *
 * - C0 controls and DEL as their Unicode control pictures (ESC → ␛, BEL → ␇, CR → ␍), except
 *   newline and tab; a CR that only precedes a newline (CRLF) is dropped;
 * - C1 controls (U+0080–U+009F, e.g. the one-byte CSI U+009B) and the bidi controls (U+202A–U+202E,
 *   U+2066–U+2069, U+200E, U+200F, U+061C) as `⟨U+XXXX⟩`.
 *
 * Per character and stateless, so text that arrives in pieces (streamed deltas) is made safe piece
 * by piece. The chat's own styling (bold, dim) is added after this, and stays.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const C0_OR_DEL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;
const C1_OR_BIDI = /[\u0080-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function visible(text: string): string {
  return text
    .replace(/\r\n/g, '\n')
    .replace(C0_OR_DEL, (c) => String.fromCharCode(c === '\u007f' ? 0x2421 : 0x2400 + c.charCodeAt(0)))
    .replace(C1_OR_BIDI, (c) => `⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`);
}
