/**
 * Checkpoints (SPEC LOC-5 `checkpoints`): snapshots of a session's working directory taken before a
 * tool call that may change files, and the restore of one of them.
 *
 * checkpoint     One saved state of the working tree: a git commit in the shadow repository of the
 *                session's cwd, named by the ref `refs/gatehouse/<session>/<n>` (n = 1, 2, … per
 *                session). Commits have no parents, so dropping a ref frees what only it held.
 * shadow repo    `<root>/<sha256(realpath cwd)[:16]>/`: a git dir in the home whose work tree is the
 *                cwd. Sessions on the same cwd share it (and its objects); every operation on one
 *                shadow repo runs after the previous one (one queue per repo, in this process).
 *
 * Limits: a tree with more than `maxFiles` files or `maxBytes` bytes (after the ignore rules) is not
 * saved — the snapshot says so, it is never silently dropped; a session keeps its newest
 * `maxPerSession` checkpoints. Ignore rules: the cwd's own .gitignore files and DEFAULT_EXCLUDES.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { git, type GitRepo } from './git.js';

export interface CheckpointLimits {
  maxFiles: number;
  maxBytes: number;
  maxPerSession: number;
}

export const CHECKPOINT_DEFAULTS: CheckpointLimits = {
  maxFiles: 10_000,
  maxBytes: 256 * 1024 * 1024,
  maxPerSession: 50,
};

/** Never saved nor restored (besides .gitignore rules): dependency and cache folders. */
export const DEFAULT_EXCLUDES = ['node_modules/', '.venv/', '__pycache__/', '.DS_Store'];

export interface Checkpoint {
  /** 1, 2, … within the session. */
  checkpoint: number;
  commit: string;
  /** The commit's tree: equal trees are equal working trees. */
  tree: string;
  created_at: string;
  /** `tool`: before a tool call; `rollback`: the state just before a restore (so it can be undone). */
  kind: 'tool' | 'rollback';
  tool: string | null;
  /** One line for humans: the tool and what it was asked to do. */
  label: string;
  files: number;
  bytes: number;
  admission_id: string | null;
}

export type SnapshotOutcome =
  | { kind: 'created'; checkpoint: Checkpoint }
  /** The tree is the same as the session's newest checkpoint: that one stands for it. */
  | { kind: 'unchanged'; checkpoint: Checkpoint }
  | { kind: 'skipped'; reason: string };

export interface RestoreResult {
  restored: Checkpoint;
  /** The state the restore replaced, saved first (or the checkpoint that already held it). */
  saved: Checkpoint;
  /** Files the restore wrote back (deleted since), changed back, and removed (created since). */
  recreated: number;
  reverted: number;
  removed: number;
}

/** A restore that cannot happen; `reason` says which kind (the gateway maps it onto the wire). */
export class CheckpointError extends Error {
  constructor(
    readonly reason: 'not_found' | 'too_large',
    message: string,
  ) {
    super(message);
    this.name = 'CheckpointError';
  }
}

interface Meta {
  kind: Checkpoint['kind'];
  tool: string | null;
  label: string;
  admission_id: string | null;
}

const REF_ROOT = 'refs/gatehouse';
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$/;

export class CheckpointStore {
  /** The tail of each shadow repo's queue; removed once it drains, so the map stays small. */
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly opened = new Set<string>();

  constructor(
    /** `<profile>/checkpoints`. */
    private readonly root: string,
    readonly limits: CheckpointLimits = CHECKPOINT_DEFAULTS,
  ) {}

  /** The shadow repository of a working directory. */
  async repoOf(cwd: string): Promise<GitRepo> {
    const real = await fs.realpath(cwd);
    const hash = createHash('sha256').update(real).digest('hex').slice(0, 16);
    return { gitDir: path.join(this.root, hash), workTree: real };
  }

  snapshot(sessionId: string, cwd: string, meta: Meta): Promise<SnapshotOutcome> {
    return this.locked(cwd, (repo) => this.snapshotLocked(repo, sessionId, meta));
  }

  /** The session's checkpoints, oldest first. */
  list(sessionId: string, cwd: string): Promise<Checkpoint[]> {
    return this.locked(cwd, (repo) => this.listLocked(repo, sessionId));
  }

  /**
   * Puts the working tree back as checkpoint `n` saved it: files written back byte for byte,
   * files created since removed (only files checkpoints track; ignored ones are left alone). The
   * state it replaces is saved first as a `rollback` checkpoint, so a restore can be undone.
   */
  restore(sessionId: string, cwd: string, n: number): Promise<RestoreResult> {
    return this.locked(cwd, async (repo) => {
      const all = await this.listLocked(repo, sessionId);
      const target = all.find((c) => c.checkpoint === n);
      if (!target) {
        const known = all.map((c) => c.checkpoint).join(', ') || 'none';
        throw new CheckpointError(
          'not_found',
          `there is no checkpoint ${n} in this session (known: ${known})`,
        );
      }
      const saved = await this.snapshotLocked(
        repo,
        sessionId,
        { kind: 'rollback', tool: null, label: `before rollback to checkpoint ${n}`, admission_id: null },
        n,
      );
      if (saved.kind === 'skipped') {
        throw new CheckpointError(
          'too_large',
          `the working tree cannot be saved before the rollback (${saved.reason}), so it was not restored`,
        );
      }
      const current = saved.checkpoint.tree;
      const wanted = target.tree;
      const diff = await git(repo, [
        'diff-tree',
        '-r',
        '--no-renames',
        '--name-status',
        '-z',
        current,
        wanted,
      ]);
      const counts = { recreated: 0, reverted: 0, removed: 0 };
      const fields = diff.stdout.split('\0');
      for (let i = 0; i + 1 < fields.length; i += 2) {
        const status = fields[i]!;
        if (status === 'A') counts.recreated++;
        else if (status === 'D') counts.removed++;
        else counts.reverted++;
      }
      // The index holds the current tree (the save above added it): switching to the target
      // writes its files and removes those it lacks.
      await git(repo, ['read-tree', '-u', '--reset', target.commit]);
      return { restored: target, saved: saved.checkpoint, ...counts };
    });
  }

  /** `keep`: a checkpoint the count limit must not drop now (the one a restore is about to use). */
  private async snapshotLocked(
    repo: GitRepo,
    sessionId: string,
    meta: Meta,
    keep?: number,
  ): Promise<SnapshotOutcome> {
    if (!SESSION_ID.test(sessionId)) throw new Error(`not a session id: ${sessionId}`);
    await this.open(repo);
    const size = await this.measure(repo);
    if (size.over) return { kind: 'skipped', reason: size.over };
    await git(repo, ['add', '-A', '--ignore-errors']);
    const tree = (await git(repo, ['write-tree'])).stdout.trim();
    const existing = await this.listLocked(repo, sessionId);
    const newest = existing.at(-1);
    if (newest?.tree === tree) return { kind: 'unchanged', checkpoint: newest };
    const n = (newest?.checkpoint ?? 0) + 1;
    const created_at = new Date().toISOString();
    const subject = JSON.stringify({ ...meta, tree, files: size.files, bytes: size.bytes, created_at });
    const commit = (await git(repo, ['commit-tree', tree, '-m', subject])).stdout.trim();
    const checkpoint: Checkpoint = {
      checkpoint: n,
      commit,
      tree,
      created_at,
      ...meta,
      files: size.files,
      bytes: size.bytes,
    };
    const excess = Math.max(0, existing.length + 1 - this.limits.maxPerSession);
    const dropped = existing.filter((c) => c.checkpoint !== keep).slice(0, excess);
    // One transaction: the new ref, and the oldest ones over the count limit gone.
    const input = [
      `create ${refName(sessionId, n)} ${commit}\n`,
      ...dropped.map((c) => `delete ${refName(sessionId, c.checkpoint)}\n`),
    ].join('');
    await git(repo, ['update-ref', '--stdin'], { input });
    // Commits have no parents: what only the dropped ones held is unreachable now.
    if (dropped.length > 0) await git(repo, ['prune', '--expire=now']);
    return { kind: 'created', checkpoint };
  }

  private async listLocked(repo: GitRepo, sessionId: string): Promise<Checkpoint[]> {
    try {
      await fs.access(path.join(repo.gitDir, 'HEAD'));
    } catch {
      return [];
    }
    const format = '%(refname)%09%(objectname)%09%(contents:subject)';
    const out = await git(repo, ['for-each-ref', `--format=${format}`, `${REF_ROOT}/${sessionId}/`]);
    const found: Checkpoint[] = [];
    for (const line of out.stdout.split('\n')) {
      const [ref, commit, subject] = line.split('\t');
      if (!ref || !commit || subject === undefined) continue;
      const n = Number(ref.slice(ref.lastIndexOf('/') + 1));
      try {
        const meta = JSON.parse(subject) as Omit<Checkpoint, 'checkpoint' | 'commit'>;
        found.push({ ...meta, checkpoint: n, commit });
      } catch {
        // Not one of ours: leave it out.
      }
    }
    return found.sort((a, b) => a.checkpoint - b.checkpoint);
  }

  /** Files and bytes the snapshot would save, or why it is over the limits. */
  private async measure(repo: GitRepo): Promise<{ files: number; bytes: number; over: string | null }> {
    const { maxFiles, maxBytes } = this.limits;
    const paths: string[] = [];
    let rest = '';
    let tooMany = false;
    await git(repo, ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      onChunk: (chunk) => {
        const parts = (rest + chunk).split('\0');
        rest = parts.pop() ?? '';
        for (const p of parts) if (p !== '') paths.push(p);
        tooMany = paths.length > maxFiles;
        return tooMany;
      },
    });
    if (tooMany) {
      return {
        files: paths.length,
        bytes: 0,
        over: `the working tree has more than ${maxFiles} files (checkpoints.max_files)`,
      };
    }
    let bytes = 0;
    const unique = [...new Set(paths)];
    for (let i = 0; i < unique.length; i += 64) {
      const sizes = await Promise.all(
        unique.slice(i, i + 64).map((p) =>
          fs.lstat(path.join(repo.workTree, p)).then(
            (s) => (s.isFile() ? s.size : 0),
            () => 0,
          ),
        ),
      );
      for (const s of sizes) bytes += s;
      if (bytes > maxBytes) {
        return {
          files: unique.length,
          bytes,
          over: `the working tree holds more than ${maxBytes} bytes (checkpoints.max_bytes)`,
        };
      }
    }
    return { files: unique.length, bytes, over: null };
  }

  /** Creates the shadow repo on first use; after a crash, clears a lock only this process takes. */
  private async open(repo: GitRepo): Promise<void> {
    if (this.opened.has(repo.gitDir)) return;
    await fs.mkdir(this.root, { recursive: true, mode: 0o700 });
    try {
      await fs.access(path.join(repo.gitDir, 'HEAD'));
    } catch {
      await git(repo, ['init', '--quiet', '--template=', '--shared=0600']);
    }
    await fs.mkdir(path.join(repo.gitDir, 'info'), { recursive: true, mode: 0o700 });
    await fs.writeFile(path.join(repo.gitDir, 'info', 'exclude'), `${DEFAULT_EXCLUDES.join('\n')}\n`, {
      mode: 0o600,
    });
    await fs.writeFile(path.join(repo.gitDir, 'gatehouse-cwd'), `${repo.workTree}\n`, { mode: 0o600 });
    await fs.rm(path.join(repo.gitDir, 'index.lock'), { force: true });
    this.opened.add(repo.gitDir);
  }

  private async locked<T>(cwd: string, work: (repo: GitRepo) => Promise<T>): Promise<T> {
    const repo = await this.repoOf(cwd);
    const key = repo.gitDir;
    const before = this.queues.get(key) ?? Promise.resolve();
    const run = before.then(
      () => work(repo),
      () => work(repo),
    );
    const tail = run.catch(() => undefined);
    this.queues.set(key, tail);
    void tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    return run;
  }
}

function refName(sessionId: string, n: number): string {
  return `${REF_ROOT}/${sessionId}/${n}`;
}
