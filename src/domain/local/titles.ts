/**
 * Session titles (issue 12 item 19). A session without one is titled from its first message, so
 * `gatehouse sessions` and pickers show what each is about; the owner may rename it
 * (`session.title`). Pure: the service stores what these return.
 */
/** Titles are one line of at most this many characters. */
export const TITLE_MAX = 80;
/** A title made from a message is cut to this, at a word boundary. */
const AUTO_TITLE_MAX = 60;

/** The title a first message gives its session: its first line, whitespace collapsed, shortened. */
export function titleFromMessage(text: string): string | null {
  const line = text
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .find((l) => l !== '');
  if (line === undefined) return null;
  if (line.length <= AUTO_TITLE_MAX) return line;
  const cut = line.slice(0, AUTO_TITLE_MAX - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > AUTO_TITLE_MAX / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
