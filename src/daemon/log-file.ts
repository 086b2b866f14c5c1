/**
 * The daemon log's file, rotated by size: when a line would take `gateway.log` past `maxBytes`, it
 * becomes `gateway.log.1` (the older ones shift to `.2`, `.3` …, the oldest beyond `keep` is
 * overwritten) and a fresh owner-only `gateway.log` is started. Writes are synchronous, like the
 * plain pino destination this replaces: a crash must not lose the line that explains it.
 */
import { closeSync, fstatSync, openSync, renameSync, writeSync } from 'node:fs';

export interface LogRotation {
  /** Size past which the file is rotated, in bytes. */
  readonly maxBytes: number;
  /** Rotated files kept besides the live one. */
  readonly keep: number;
}

export const DEFAULT_LOG_ROTATION: LogRotation = { maxBytes: 10 * 1024 * 1024, keep: 3 };

export class RotatingLogFile {
  private fd: number;
  private size: number;

  constructor(
    private readonly file: string,
    private readonly rotation: LogRotation = DEFAULT_LOG_ROTATION,
  ) {
    if (!(rotation.maxBytes > 0) || !Number.isInteger(rotation.keep) || rotation.keep < 1) {
      throw new Error(`invalid log rotation ${JSON.stringify(rotation)}`);
    }
    this.fd = openSync(file, 'a', 0o600);
    this.size = fstatSync(this.fd).size;
  }

  /** pino's stream contract: one whole line per call. */
  write(line: string): boolean {
    const bytes = Buffer.byteLength(line);
    try {
      if (this.size > 0 && this.size + bytes > this.rotation.maxBytes) this.rotate();
      writeSync(this.fd, line);
      this.size += bytes;
    } catch {
      // A full or vanished disk must not crash the daemon through its log; the line is lost, and
      // the storage layer reports a write failure of its own where it matters.
    }
    return true;
  }

  close(): void {
    closeSync(this.fd);
  }

  private rotate(): void {
    closeSync(this.fd);
    for (let n = this.rotation.keep - 1; n >= 1; n--) {
      try {
        renameSync(`${this.file}.${n}`, `${this.file}.${n + 1}`);
      } catch {
        // not there yet
      }
    }
    renameSync(this.file, `${this.file}.1`);
    this.fd = openSync(this.file, 'a', 0o600);
    this.size = 0;
  }
}
