/**
 * Where `always` approvals live between daemon runs. The broker only needs has/add; the file-backed
 * store keeps a small JSON document and replaces it atomically (temp file, fsync, rename, fsync of
 * the directory), so a crash leaves either the old list or the new one, never half of either.
 * Keys are approval patterns (`recursive-delete:rm`) and never hold secrets.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

export interface AlwaysAllowStore {
  has(key: string): boolean;
  add(key: string): void;
}

/** An in-memory store: for tests and for sessions configured not to persist `always`. */
export class MemoryAlwaysAllowStore implements AlwaysAllowStore {
  private readonly keys = new Set<string>();
  has(key: string): boolean {
    return this.keys.has(key);
  }
  add(key: string): void {
    this.keys.add(key);
  }
}

/** The file exists but is not an approvals file we wrote. Named so an operator can fix or remove it. */
export class AlwaysAllowFileError extends Error {
  readonly reason = 'approvals_file_invalid';
  constructor(
    readonly file: string,
    detail: string,
  ) {
    super(`The approvals file ${file} cannot be read: ${detail}. Fix or remove it.`);
    this.name = 'AlwaysAllowFileError';
  }
}

interface FileShape {
  version: 1;
  always: string[];
}

export class FileAlwaysAllowStore implements AlwaysAllowStore {
  private readonly keys: Set<string>;

  constructor(readonly file: string) {
    this.keys = new Set(FileAlwaysAllowStore.load(file));
  }

  private static load(file: string): string[] {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new AlwaysAllowFileError(file, (error as Error).message);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new AlwaysAllowFileError(file, 'not valid JSON');
    }
    const shape = parsed as Partial<FileShape> | null;
    if (
      shape === null ||
      shape.version !== 1 ||
      !Array.isArray(shape.always) ||
      !shape.always.every((k) => typeof k === 'string')
    ) {
      throw new AlwaysAllowFileError(file, 'expected {"version": 1, "always": [strings]}');
    }
    return shape.always;
  }

  has(key: string): boolean {
    return this.keys.has(key);
  }

  add(key: string): void {
    if (this.keys.has(key)) return;
    const next = new Set(this.keys).add(key);
    this.write([...next].sort());
    this.keys.add(key);
  }

  private write(always: string[]): void {
    const dir = path.dirname(this.file);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const temp = path.join(dir, `.${path.basename(this.file)}.${randomBytes(6).toString('hex')}.tmp`);
    const body = `${JSON.stringify({ version: 1, always } satisfies FileShape, null, 2)}\n`;
    const fd = fs.openSync(temp, 'wx', 0o600);
    try {
      fs.writeSync(fd, body);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    try {
      fs.renameSync(temp, this.file);
    } catch (error) {
      fs.rmSync(temp, { force: true });
      throw error;
    }
    const dirFd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(dirFd);
    } finally {
      fs.closeSync(dirFd);
    }
  }
}
