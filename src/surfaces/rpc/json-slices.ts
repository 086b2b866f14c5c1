/**
 * JSON text in pieces: `jsonPieces(value)` yields strings whose concatenation is exactly
 * `JSON.stringify(value)`, so a reply of tens of megabytes (the whole history of a 100,000-message
 * session) can be serialized in slices with the event loop free between them (issue 32 aim 3).
 *
 * Only what is worth it is walked here: a long array, an object with many keys, or a container
 * holding one of those or a long string (`worthSlicing`, which looks a few levels down). Everything
 * else, each message of a history for one, is one native `JSON.stringify` call. Long strings are
 * escaped in pieces cut between UTF-16 code units that are not a surrogate pair, where escaping one
 * piece at a time gives the same text as escaping the whole.
 *
 * A JsonText (domain/json-text.ts: an array serialized off the event loop) is written as its bytes:
 * its pieces are UTF-8 already, so the pieces here are strings or such bytes.
 *
 * Same rules as `JSON.stringify` without a replacer: `toJSON(key)` is called once with the key
 * the value is under; in an object a property whose value is undefined, a function or a symbol is
 * left out, in an array it is `null`; a cycle or a BigInt throws a TypeError.
 */

import { JsonText } from '../../domain/json-text.js';

/** A piece of JSON text: characters, or the UTF-8 bytes of an array serialized already. */
export type JsonPiece = string | Uint8Array;

/** An array or object with more entries than this is walked entry by entry. */
const MANY_ENTRIES = 256;
/** Strings longer than this (in UTF-16 code units) are escaped in pieces of this size. */
export const STRING_PIECE = 64 * 1024;
/** How far down `worthSlicing` looks for something long; deeper values are serialized whole. */
const PROBE_DEPTH = 4;

function isBoxedPrimitive(value: object): boolean {
  return (
    value instanceof Number || value instanceof String || value instanceof Boolean || value instanceof BigInt
  );
}

function hasToJSON(value: object): boolean {
  return typeof (value as { toJSON?: unknown }).toJSON === 'function';
}

/** A value JSON.stringify leaves out of an object (and writes as null in an array). */
function isOmitted(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

/**
 * Pure: whether serializing `value` is long enough to be worth slicing. Cheap on small values: it
 * stops at the first long thing it meets and looks no deeper than PROBE_DEPTH levels.
 */
export function worthSlicing(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.length > STRING_PIECE;
  if (value === null || typeof value !== 'object' || depth > PROBE_DEPTH) return false;
  // Serialized already: written as it is, never parsed back by its toJSON.
  if (value instanceof JsonText) return true;
  if (hasToJSON(value) || isBoxedPrimitive(value)) return false;
  if (Array.isArray(value)) {
    if (value.length > MANY_ENTRIES) return true;
    return value.some((entry) => worthSlicing(entry, depth + 1));
  }
  const keys = Object.keys(value);
  if (keys.length > MANY_ENTRIES) return true;
  return keys.some((key) => worthSlicing((value as Record<string, unknown>)[key], depth + 1));
}

/**
 * Releases every JsonText in a reply (JsonText.release) once it is written or will never be: their
 * maker bounds the bytes it has handed out. Looks where worthSlicing looks, which is where a reply
 * holds one.
 */
export function releaseJsonTexts(value: unknown, depth = 0): void {
  if (value instanceof JsonText) return value.release();
  if (value === null || typeof value !== 'object' || depth > PROBE_DEPTH) return;
  if (hasToJSON(value) || isBoxedPrimitive(value)) return;
  const entries = Array.isArray(value) ? value : Object.values(value);
  if (entries.length > MANY_ENTRIES) return;
  for (const entry of entries) releaseJsonTexts(entry, depth + 1);
}

/** What JSON.stringify serializes in place of `value` under `key`: the result of its toJSON. */
function prepared(value: unknown, key: string): unknown {
  if (value instanceof JsonText) return value;
  if ((value !== null && typeof value === 'object') || typeof value === 'bigint') {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return (toJSON as (key: string) => unknown).call(value, key);
  }
  return value;
}

/** `JSON.stringify(value)` in pieces; throws where it would (a cycle, a BigInt). */
export function* jsonPieces(value: unknown): Generator<JsonPiece, void, undefined> {
  const root = prepared(value, '');
  if (isOmitted(root)) throw new TypeError('the value has no JSON text (undefined, a function or a symbol)');
  yield* valuePieces(root, new Set<object>());
}

/** The pieces of a value whose toJSON, if any, has already been applied. */
function* valuePieces(value: unknown, path: Set<object>): Generator<JsonPiece, void, undefined> {
  if (typeof value === 'string' && value.length > STRING_PIECE) return yield* stringPieces(value);
  if (value instanceof JsonText) {
    yield '[';
    yield* value.body;
    return yield ']';
  }
  if (value === null || typeof value !== 'object' || isBoxedPrimitive(value)) {
    return yield JSON.stringify(value);
  }
  // A toJSON on what toJSON returned is not called again, so such a value is walked, never handed whole.
  if (!hasToJSON(value) && !worthSlicing(value)) return yield JSON.stringify(value);
  if (path.has(value)) throw new TypeError('Converting circular structure to JSON');
  path.add(value);
  if (Array.isArray(value)) yield* arrayPieces(value, path);
  else yield* objectPieces(value as Record<string, unknown>, path);
  path.delete(value);
}

function* arrayPieces(array: readonly unknown[], path: Set<object>): Generator<JsonPiece, void, undefined> {
  yield '[';
  for (let i = 0; i < array.length; i++) {
    if (i > 0) yield ',';
    const entry = prepared(array[i], String(i));
    if (isOmitted(entry)) yield 'null';
    else yield* valuePieces(entry, path);
  }
  yield ']';
}

function* objectPieces(
  object: Record<string, unknown>,
  path: Set<object>,
): Generator<JsonPiece, void, undefined> {
  yield '{';
  let first = true;
  for (const key of Object.keys(object)) {
    const entry = prepared(object[key], key);
    if (isOmitted(entry)) continue;
    yield `${first ? '' : ','}${JSON.stringify(key)}:`;
    first = false;
    yield* valuePieces(entry, path);
  }
  yield '}';
}

/**
 * A long string's JSON in pieces. A cut never falls between the two halves of a surrogate pair:
 * escaped alone, each half would become a `\ud…` escape instead of the character.
 */
function* stringPieces(text: string): Generator<string, void, undefined> {
  yield '"';
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + STRING_PIECE);
    if (end < text.length && isPairAt(text, end - 1)) end -= 1;
    yield JSON.stringify(text.slice(start, end)).slice(1, -1);
    start = end;
  }
  yield '"';
}

/** Whether code units i and i+1 of `text` are a high and a low surrogate: one character. */
function isPairAt(text: string, i: number): boolean {
  const high = text.charCodeAt(i);
  const low = text.charCodeAt(i + 1);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff;
}
