/**
 * Editing config.yaml in place: one `section.key` scalar is set by splicing the file's text at the
 * source ranges the YAML parser reports, so every other byte (comments, spacing, quoting, key
 * order, flow or block style) stays exactly as the owner wrote it. Re-serialising the document
 * would normalise all of those.
 */
import { isMap, isScalar, parseDocument, type Pair, type YAMLMap } from 'yaml';

type Range = [number, number, number];

/** A plain scalar when it reads back as the same string, else a double-quoted (JSON) one. */
function render(value: string): string {
  return /^[A-Za-z][A-Za-z0-9$+/=._-]*$/.test(value) && !/^(true|false|null|yes|no|on|off)$/i.test(value)
    ? value
    : JSON.stringify(value);
}

function columnOf(text: string, offset: number): number {
  return offset - (text.lastIndexOf('\n', offset - 1) + 1);
}

function splice(text: string, start: number, end: number, insert: string): string {
  return text.slice(0, start) + insert + text.slice(end);
}

/** Offset just past the end of the line holding `offset` (a newline is added when the file lacks one). */
function endOfLine(text: string, offset: number): { text: string; at: number } {
  const newline = text.indexOf('\n', offset);
  if (newline >= 0) return { text, at: newline + 1 };
  return { text: `${text}\n`, at: text.length + 1 };
}

function pairNamed(map: YAMLMap, name: string): Pair | undefined {
  return map.items.find((pair) => isScalar(pair.key) && pair.key.value === name);
}

function spliced(text: string, section: string, key: string, value: string): string | null {
  const document = parseDocument(text);
  const line = `${key}: ${render(value)}`;
  const root = document.contents;
  if (root === null || (isScalar(root) && root.value === null)) {
    const base = text.length === 0 || text.endsWith('\n') ? text : `${text}\n`;
    return `${base}${section}:\n  ${line}\n`;
  }
  if (!isMap(root) || root.flow) return null;
  const sectionPair = pairNamed(root, section);
  if (!sectionPair) {
    const base = text.endsWith('\n') ? text : `${text}\n`;
    return `${base}${section}:\n  ${line}\n`;
  }
  const sectionValue = sectionPair.value;
  if (isScalar(sectionValue) && sectionValue.value === null) {
    const [start, end] = sectionValue.range as Range;
    if (start === end) {
      const indent = ' '.repeat(columnOf(text, (sectionPair.key as { range: Range }).range[0]) + 2);
      return splice(text, start, end, `\n${indent}${line}`);
    }
    return splice(text, start, end, `{ ${line} }`);
  }
  if (!isMap(sectionValue)) return null;
  const existing = pairNamed(sectionValue, key);
  if (existing) {
    if (!isScalar(existing.value)) return null;
    const [start, end] = existing.value.range as Range;
    return splice(text, start, end, render(value));
  }
  const last = sectionValue.items.at(-1);
  if (sectionValue.flow) {
    const close = (sectionValue.range as Range)[1] - 1;
    return splice(text, close, close, last ? `, ${line} ` : ` ${line} `);
  }
  if (!last || !isScalar(last.key)) return null;
  const indent = ' '.repeat(columnOf(text, (last.key.range as Range)[0]));
  const lastEnd = ((last.value as { range?: Range } | null)?.range ?? (last.key.range as Range))[1];
  const after = endOfLine(text, lastEnd);
  return splice(after.text, after.at, after.at, `${indent}${line}\n`);
}

/**
 * `text` with `section.key` set to the string `value`, every other byte unchanged. Layouts the
 * splice does not handle (a flow-style top level, a section that is not a mapping) fall back to
 * re-serialising the document; the result is always checked to read back as intended.
 */
export function setConfigString(text: string, section: string, key: string, value: string): string {
  let updated = spliced(text, section, key, value);
  if (updated === null || parseDocument(updated).getIn([section, key]) !== value) {
    const document = parseDocument(text);
    document.setIn([section, key], value);
    updated = document.toString();
  }
  return updated;
}
