/**
 * Where `always` approvals live between daemon runs (issue 25: remember exactly what was approved).
 *
 * A rule is the SHA-256 of (kind, cwd, exact command): it approves that command, byte for byte, in
 * that directory, and nothing else. Beside the key it keeps what the human saw (the command with
 * secret values masked), so `gatehouse approvals list` can show it; the full command is never written.
 *
 * The file is a small JSON document (version 2), owner-only (0600), replaced atomically (temp file,
 * fsync, rename, fsync of the directory): a crash leaves the old list or the new one. A version 1
 * file (rules keyed on a detector pattern or redacted text) is read as empty, never honoured: its
 * rules were wider than what the human saw. The next `always` answer rewrites it as version 2.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

export interface AlwaysRule {
  /** Stable id for revoke: `apr_` + the first 16 hex digits of the key. */
  id: string;
  /** SHA-256 hex of kind, cwd and the exact command. */
  key: string;
  kind: 'command' | 'edit';
  cwd: string;
  /** The command as the human saw it (secret values masked). */
  shown: string;
  created_at: string;
}

export interface AlwaysAllowStore {
  has(key: string): boolean;
  add(rule: AlwaysRule): void;
  list(): AlwaysRule[];
  /** Removes the rule with this id; false when there is none. */
  revoke(id: string): boolean;
}

/** An in-memory store: for tests and for sessions configured not to persist `always`. */
export class MemoryAlwaysAllowStore implements AlwaysAllowStore {
  protected readonly rules = new Map<string, AlwaysRule>();
  has(key: string): boolean {
    return this.rules.has(key);
  }
  add(rule: AlwaysRule): void {
    this.rules.set(rule.key, rule);
  }
  list(): AlwaysRule[] {
    return [...this.rules.values()];
  }
  revoke(id: string): boolean {
    const rule = [...this.rules.values()].find((r) => r.id === id);
    return rule !== undefined && this.rules.delete(rule.key);
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
  version: 2;
  rules: AlwaysRule[];
}

function isRule(value: unknown): value is AlwaysRule {
  const r = value as Partial<AlwaysRule> | null;
  return (
    r !== null &&
    typeof r === 'object' &&
    typeof r.id === 'string' &&
    typeof r.key === 'string' &&
    /^[0-9a-f]{64}$/.test(r.key) &&
    (r.kind === 'command' || r.kind === 'edit') &&
    typeof r.cwd === 'string' &&
    typeof r.shown === 'string' &&
    typeof r.created_at === 'string'
  );
}

export class FileAlwaysAllowStore extends MemoryAlwaysAllowStore {
  constructor(readonly file: string) {
    super();
    for (const rule of FileAlwaysAllowStore.load(file)) this.rules.set(rule.key, rule);
  }

  private static load(file: string): AlwaysRule[] {
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
    const shape = parsed as { version?: unknown; rules?: unknown } | null;
    if (shape !== null && shape.version === 1) return []; // never honoured: see the header
    if (shape === null || shape.version !== 2 || !Array.isArray(shape.rules) || !shape.rules.every(isRule)) {
      throw new AlwaysAllowFileError(file, 'expected {"version": 2, "rules": [...]}');
    }
    return shape.rules;
  }

  override add(rule: AlwaysRule): void {
    if (this.rules.has(rule.key)) return;
    this.write([...this.rules.values(), rule]);
    super.add(rule);
  }

  override revoke(id: string): boolean {
    const rest = this.list().filter((r) => r.id !== id);
    if (rest.length === this.rules.size) return false;
    this.write(rest);
    return super.revoke(id);
  }

  private write(rules: AlwaysRule[]): void {
    const dir = path.dirname(this.file);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const temp = path.join(dir, `.${path.basename(this.file)}.${randomBytes(6).toString('hex')}.tmp`);
    const body = `${JSON.stringify({ version: 2, rules } satisfies FileShape, null, 2)}\n`;
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
