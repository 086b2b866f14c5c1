/**
 * Colours in the command line's own output (`status`, `doctor`, `sessions`, the chat): only on a
 * terminal, and never when `NO_COLOR` is set to anything (no-color.org). A pipe, a log or a script
 * reading the output gets the same text without a single escape code.
 */

export interface Colours {
  bold: (text: string) => string;
  dim: (text: string) => string;
  green: (text: string) => string;
  red: (text: string) => string;
  yellow: (text: string) => string;
}

/** Whether output to `stream` is coloured: a terminal, and NO_COLOR unset or empty. */
export function wantsColour(
  stream: { isTTY?: boolean } = process.stdout,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  return stream.isTTY === true && !env['NO_COLOR'];
}

const sgr =
  (on: number, off: number) =>
  (text: string): string =>
    text === '' ? text : `\u001b[${on}m${text}\u001b[${off}m`;

export const ANSI_COLOURS: Colours = {
  bold: sgr(1, 22),
  dim: sgr(2, 22),
  green: sgr(32, 39),
  red: sgr(31, 39),
  yellow: sgr(33, 39),
};

const same = (text: string): string => text;
export const NO_COLOURS: Colours = { bold: same, dim: same, green: same, red: same, yellow: same };

/** The colours for standard output as this process runs now. */
export function colours(): Colours {
  return wantsColour() ? ANSI_COLOURS : NO_COLOURS;
}
