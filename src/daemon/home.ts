/**
 * The Gatehouse home directory and its layout, in one place. Every path the daemon or the CLI
 * touches is named here, so a reader can see the whole on-disk footprint at a glance:
 *
 *   <home>/config.yaml                     the configuration (owner-only)
 *   <home>/profiles/<profile>/state.db     one SQLite database per profile
 *   <home>/run/gateway.pid                 pid of the running daemon (present while it lives)
 *   <home>/run/gateway.json                how to reach it (written once ready, removed on exit)
 *   <home>/gateway.sock                    the owner-only control socket (socket-path.ts: elsewhere
 *                                          when the home's path is too long for a Unix socket)
 *   <home>/logs/gateway.log                the daemon log (JSON lines)
 */
import { chmodSync, existsSync, lstatSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { makeDirs } from './dirs.js';
import { controlSocketPath } from './socket-path.js';
import { DaemonError, oneLine } from './errors.js';

export interface HomeLayout {
  readonly root: string;
  readonly configFile: string;
  readonly profilesDir: string;
  readonly runDir: string;
  readonly pidFile: string;
  readonly gatewayJson: string;
  readonly controlSocket: string;
  readonly logsDir: string;
  readonly logFile: string;
  profileDir(profile: string): string;
  stateDb(profile: string): string;
}

/** `GATEHOUSE_HOME` when set, else `~/.gatehouse`. */
export function resolveHomeDir(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env['GATEHOUSE_HOME']?.trim();
  return resolve(fromEnv ? fromEnv : join(homedir(), '.gatehouse'));
}

export function homeLayout(root: string): HomeLayout {
  const runDir = join(root, 'run');
  const logsDir = join(root, 'logs');
  const profilesDir = join(root, 'profiles');
  return {
    root,
    configFile: join(root, 'config.yaml'),
    profilesDir,
    runDir,
    pidFile: join(runDir, 'gateway.pid'),
    gatewayJson: join(runDir, 'gateway.json'),
    controlSocket: controlSocketPath(root),
    logsDir,
    logFile: join(logsDir, 'gateway.log'),
    profileDir: (profile) => join(profilesDir, profile),
    stateDb: (profile) => join(profilesDir, profile, 'state.db'),
  };
}

/** Creates the home and its folders, owner-only: the home holds credentials and transcripts. */
export function ensureHomeDirs(layout: HomeLayout): void {
  try {
    for (const dir of [layout.root, layout.runDir, layout.logsDir, layout.profilesDir]) {
      makeDirs(dir, 0o700);
    }
    chmodSync(layout.root, 0o700);
  } catch (error) {
    throw new DaemonError(
      'home_unusable',
      `cannot create the Gatehouse home ${layout.root} (${oneLine(error)}): set GATEHOUSE_HOME to a writable directory`,
      { cause: error },
    );
  }
}

/**
 * Makes everything under the home owner-only (directories 0700, files 0600 or 0700), fixing what
 * an older version, a restore or a hand-made file left looser. Symbolic links are not followed:
 * their targets are not the home's. Returns the paths it changed.
 */
export function tightenHome(layout: HomeLayout): string[] {
  const changed: string[] = [];
  const visit = (path: string): void => {
    let stat;
    try {
      stat = lstatSync(path);
    } catch {
      return; // removed meanwhile
    }
    if (stat.isSymbolicLink()) return;
    if ((stat.mode & 0o077) !== 0) {
      // Drop every group and other bit; keep the owner's (a directory's owner needs all three).
      try {
        chmodSync(path, stat.isDirectory() ? 0o700 : stat.mode & 0o700);
      } catch (error) {
        throw new DaemonError(
          'home_unusable',
          `cannot make ${path} owner-only (${oneLine(error)}): change its owner or mode (chmod go-rwx)`,
          { cause: error },
        );
      }
      changed.push(path);
    }
    if (stat.isDirectory()) for (const entry of readdirSync(path)) visit(join(path, entry));
  };
  visit(layout.root);
  return changed;
}

export const DEFAULT_CONFIG_YAML = `# Gatehouse configuration. Every key is optional; see docs/configuration.md.

# The profile this gateway serves (one; its store is profiles/<name>/state.db).
profiles: [default]
default_profile: default

# The model. Without this section Gatehouse uses the built-in demo model: a scripted, offline
# stand-in that needs no account. To use a real OpenAI-compatible endpoint, uncomment:
# model:
#   base_url: https://api.openai.com/v1
#   model: gpt-4o-mini
#   api_key_env: OPENAI_API_KEY   # the NAME of the environment variable holding the key
#
# Several providers instead (a session picks one with session.create's provider):
# providers:
#   openai:
#     base_url: https://api.openai.com/v1
#     api_key_env: OPENAI_API_KEY
#     models: [gpt-4o-mini, gpt-4.1]
# default_provider: openai

listener:
  host: 127.0.0.1
  # port: 7423       # the default; when another process holds it a free port is used (and said).
                     # Set it (or use --port) to insist on one; 0 = any free port.
  allow_remote: false

approvals:
  mode: default      # default | detect | deny | off (docs/approvals.md)
  timeout_s: 300

limits:
  max_concurrent_turns: 8

drain_timeout_s: 30

sessions:
  group_sessions_per_user: true
  thread_sessions_per_user: false
`;

/** Creates the home and a commented default config.yaml if none exists. Never overwrites. */
export function initHome(layout: HomeLayout): { createdConfig: boolean } {
  ensureHomeDirs(layout);
  if (existsSync(layout.configFile)) return { createdConfig: false };
  writeFileAtomic(layout.configFile, DEFAULT_CONFIG_YAML, 0o600);
  return { createdConfig: true };
}

/** Write-then-rename, so a reader never sees half a file and a crash never leaves one. */
export function writeFileAtomic(file: string, contents: string, mode = 0o600): void {
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, contents, { mode });
  renameSync(temp, file);
}
