/**
 * The git plumbing behind checkpoints: one shadow repository per working directory, kept in the
 * home, whose work tree is the session's cwd. Every command gets GIT_DIR and GIT_WORK_TREE set and
 * an environment built from nothing (no GIT_* of the daemon's, no system or global config), so git
 * never looks for, reads or writes the `.git` of the user's own repository — git itself refuses to
 * track any path named `.git`, so the user's repository is not copied either.
 */
import { spawn, spawnSync } from 'node:child_process';

export interface GitRepo {
  /** The shadow repository (a bare-style git dir in the home). */
  gitDir: string;
  /** The session's working directory. */
  workTree: string;
}

export class GitError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly stderr: string,
    readonly code: number | null,
  ) {
    super(`git ${args[0] ?? ''} failed (exit ${code}): ${stderr.trim().split('\n')[0] ?? ''}`);
    this.name = 'GitError';
  }
}

const IDENTITY = 'Gatehouse checkpoints';

function gitEnv(repo: GitRepo): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: repo.gitDir,
    LANG: 'C',
    LC_ALL: 'C',
    GIT_DIR: repo.gitDir,
    GIT_WORK_TREE: repo.workTree,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: IDENTITY,
    GIT_AUTHOR_EMAIL: 'checkpoints@gatehouse.invalid',
    GIT_COMMITTER_NAME: IDENTITY,
    GIT_COMMITTER_EMAIL: 'checkpoints@gatehouse.invalid',
  };
}

export interface GitRun {
  stdout: string;
  /** The output stopped early because `stopAfter` said so (the process was killed). */
  stopped: boolean;
}

/**
 * Runs `git <args>` in the work tree. `onChunk` sees stdout as it comes and may return true to
 * stop the command (a listing that is already too long); otherwise stdout is returned whole.
 */
export function git(
  repo: GitRepo,
  args: readonly string[],
  options: { onChunk?: (chunk: string) => boolean; input?: string } = {},
): Promise<GitRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['-c', 'core.hooksPath=/dev/null', '-c', 'gc.auto=0', ...args], {
      cwd: repo.workTree,
      env: gitEnv(repo),
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let stopped = false;
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      if (stopped) return;
      if (options.onChunk) {
        if (options.onChunk(chunk)) {
          stopped = true;
          child.kill('SIGKILL');
        }
      } else stdout += chunk;
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    child.on('error', (error) => reject(new GitError(args, error.message, null)));
    child.on('close', (code) => {
      if (stopped) resolve({ stdout, stopped });
      else if (code === 0) resolve({ stdout, stopped });
      else reject(new GitError(args, stderr, code));
    });
    if (options.input !== undefined) child.stdin!.end(options.input);
  });
}

/**
 * Why this host cannot take checkpoints, or null when it can: they need a `git` on the daemon's
 * PATH. Run at `session.create` with `checkpoints: true` (a few milliseconds), so a session is never
 * accepted with checkpoints that would silently not be taken.
 */
export function gitRefusal(env: NodeJS.ProcessEnv = process.env): string | null {
  const probe = spawnSync('git', ['--version'], {
    env: { PATH: env['PATH'] ?? '/usr/bin:/bin', LANG: 'C', LC_ALL: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 10_000,
  });
  if (probe.error) {
    const missing = (probe.error as NodeJS.ErrnoException).code === 'ENOENT';
    return missing
      ? "git was not found on the gateway's PATH (checkpoints snapshot the working tree with git); install git, or create the session without checkpoints"
      : `git could not be run (${probe.error.message}); create the session without checkpoints`;
  }
  if (probe.status !== 0) {
    return `git --version failed (exit ${probe.status}); create the session without checkpoints`;
  }
  return null;
}
