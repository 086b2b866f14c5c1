/**
 * `gatehouse config get KEY` and `gatehouse config set KEY VALUE`: one key of config.yaml by its
 * dotted path (`listener.port`, `sessions.idle_suspend_s`). `set` edits the file through the yaml
 * Document API, so its comments and layout stay; the edited text must pass the same validation the
 * daemon applies before it is written (write-then-rename), and a refused value leaves the file as it
 * was. Secrets are refused: they belong in environment variables the config names (`*_env` keys).
 */
import { readFileSync } from 'node:fs';
import { isMap, isScalar, parse, parseDocument, stringify, type Document } from 'yaml';
import { parseConfig } from '../../../daemon/config.js';
import { isSecretKey, maskConfig } from '../../../daemon/config-secrets.js';
import { DaemonError } from '../../../daemon/errors.js';
import { gatewayState } from '../../../daemon/gateway-state.js';
import { initHome, writeFileAtomic } from '../../../daemon/home.js';
import { cliHome, note, say } from '../shared.js';
import { loadCliConfig } from '../load-config.js';

/** `a.b.c` → ['a', 'b', 'c']; refuses empty parts. */
export function keyPath(key: string): string[] {
  const parts = key.split('.');
  if (key === '' || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p))) {
    throw new DaemonError(
      'invalid_input',
      `"${key}" is not a config key: write its dotted path, e.g. listener.port (see docs/configuration.md)`,
    );
  }
  return parts;
}

function valueAt(root: unknown, path: readonly string[]): unknown {
  let at: unknown = root;
  for (const part of path) {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

/** The value text as YAML reads it (`8080` a number, `true` a boolean), else the text itself. */
export function readValue(text: string): unknown {
  try {
    return parse(text) as unknown;
  } catch {
    return text;
  }
}

function printable(value: unknown): string {
  if (value === null || typeof value !== 'object') return String(value);
  return stringify(value).trimEnd();
}

/** Whether the schema knows `path`: a key it does not know is refused as "unknown key" by name. */
function isKnownKey(path: readonly string[], file: string): boolean {
  const doc = parseDocument('');
  doc.setIn(path, null);
  try {
    parseConfig(doc.toString(), file);
    return true;
  } catch (error) {
    return !(error instanceof Error && error.message.includes(`${path.join('.')}: unknown key`));
  }
}

/**
 * `text` with `path` set to `value`. Where it can, the edit touches only the value's own characters
 * (an existing scalar) or adds one line to an existing block mapping, so every other byte — comments,
 * their alignment, blank lines — stays as the user wrote it; otherwise the Document API writes it.
 */
export function editedText(text: string, path: readonly string[], value: unknown): string {
  const doc = parseDocument(text);
  const scalarText = value === null || typeof value !== 'object' ? stringify(value).trimEnd() : null;
  const spliced = scalarText === null ? null : splice(doc, text, path, scalarText);
  if (spliced !== null && JSON.stringify(parse(spliced)) === JSON.stringify(withValue(doc, path, value))) {
    return spliced;
  }
  doc.setIn(path, value);
  return doc.toString();
}

function withValue(doc: Document, path: readonly string[], value: unknown): unknown {
  const copy = doc.clone();
  copy.setIn(path, value);
  return copy.toJS();
}

function splice(doc: Document, text: string, path: readonly string[], scalar: string): string | null {
  const node = doc.getIn(path, true);
  if (isScalar(node) && node.range) return text.slice(0, node.range[0]) + scalar + text.slice(node.range[1]);
  if (node !== undefined) return null;
  const parent = path.length === 1 ? doc.contents : doc.getIn(path.slice(0, -1), true);
  if (!isMap(parent) || parent.flow || parent.items.length === 0) return null;
  const first = parent.items[0]!.key as { range?: [number, number, number] } | null;
  const last = parent.items[parent.items.length - 1]!.value as { range?: [number, number, number] } | null;
  if (!first?.range || !last?.range) return null;
  const indent = text.slice(text.lastIndexOf('\n', first.range[0] - 1) + 1, first.range[0]);
  if (indent.trim() !== '') return null;
  const lineEnd = text.indexOf('\n', last.range[1] - 1);
  const at = lineEnd === -1 ? text.length : lineEnd + 1;
  const line = `${indent}${path[path.length - 1]}: ${scalar}\n`;
  return `${text.slice(0, at)}${lineEnd === -1 ? '\n' : ''}${line}${text.slice(at)}`;
}

/** `gatehouse config get KEY`: the effective value (defaults filled in, secrets masked). */
export function configGet(key: string): void {
  const path = keyPath(key);
  const loaded = loadCliConfig(cliHome(), { quiet: true });
  const value = valueAt(maskConfig(loaded.config), path);
  if (value !== undefined) return say(printable(value));
  if (!isKnownKey(path, loaded.file)) {
    throw new DaemonError(
      'invalid_input',
      `${key} is not a config key (see docs/configuration.md, or "gatehouse config" for every key)`,
    );
  }
  throw new DaemonError('not_available', `${key} is not set and has no default`);
}

/** `gatehouse config set KEY VALUE`: validated, comments kept, written atomically. */
export function configSet(key: string, valueText: string): void {
  const path = keyPath(key);
  const layout = cliHome();
  initHome(layout);
  const text = readFileSync(layout.configFile, 'utf8');
  loadCliConfig(layout, { quiet: true }); // a file broken already is reported as itself, not as this edit
  const last = path[path.length - 1]!;
  if (isSecretKey(last) || last === 'password_hash') {
    throw new DaemonError(
      'invalid_input',
      last === 'password_hash'
        ? 'the dashboard password is set with "gatehouse passwd" (it stores only a hash); nothing was changed'
        : `${key} holds a secret, and gatehouse does not write secrets to disk: export it in an environment variable and set ${key}_env to that variable's name; nothing was changed`,
    );
  }
  const value = readValue(valueText);
  const edited = editedText(text, path, value);
  const loaded = parseConfig(edited, layout.configFile); // refuses what the daemon would refuse
  const raw = valueAt(loaded.config, path);
  writeFileAtomic(layout.configFile, edited, 0o600);
  say(`${key}: ${printable(raw ?? value)} (written to ${layout.configFile})`);
  const state = gatewayState(layout);
  if (state.status !== 'stopped') {
    note('the running gateway read its config at start: "gatehouse stop" then "gatehouse start" applies it');
  }
}
