/**
 * The danger rules, one row each (SPEC RUN-3). docs/approvals.md lists them with examples; the table
 * test in test/unit/tools/detector.test.ts holds the cases each row must catch and must let pass.
 *
 * A rule looks at one simple command (after wrappers) with its pipeline around it. Rules are
 * ordered: the first match names the reason the human sees.
 */
import { escapesCwd, hasFlag, isDevice, operands, viewCommand, type CommandView } from './command-view.js';
import { parseShell } from './shell-parse.js';

export interface RuleContext {
  /** The session's cwd: the boundary for "outside". */
  cwd: string;
  /** Where relative paths resolve: the cwd, or where an earlier `cd` on the line went. */
  dir: string;
  /** The whole pipeline this command belongs to, in order. */
  pipeline: readonly CommandView[];
  index: number;
}

export interface DangerRule {
  /** Stable id: part of the approval memory key, so never rename one lightly. */
  rule: string;
  /** Why it is dangerous, in words the person approving reads. */
  reason: string;
  matches(view: CommandView, context: RuleContext): boolean;
}

export const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'fish', 'csh', 'tcsh']);
const INTERPRETERS = new Set([...SHELLS, 'python', 'python3', 'perl', 'ruby', 'node', 'php', 'source', '.']);
const DOWNLOADERS = new Set(['curl', 'wget', 'fetch', 'http', 'https', 'aria2c']);
const PRIVILEGE = new Set(['sudo', 'su', 'doas', 'pkexec', 'run0']);
const DISK_TOOLS = new Set([
  'fdisk',
  'sfdisk',
  'gdisk',
  'cfdisk',
  'parted',
  'wipefs',
  'mount',
  'umount',
  'losetup',
  'mkswap',
  'swapon',
  'swapoff',
  'blkdiscard',
  'hdparm',
  'cryptsetup',
]);
const POWER = new Set(['shutdown', 'reboot', 'halt', 'poweroff']);
const PACKAGE_VERBS = new Set([
  'install',
  'remove',
  'purge',
  'autoremove',
  'upgrade',
  'dist-upgrade',
  'full-upgrade',
  'erase',
  'reinstall',
  'downgrade',
  'add',
  'del',
  'localinstall',
]);
const PACKAGE_MANAGERS = new Set([
  'apt',
  'apt-get',
  'aptitude',
  'yum',
  'dnf',
  'zypper',
  'apk',
  'snap',
  'port',
]);

/** Destination operands of commands that write files: cp/mv/ln/install/rsync write the last one. */
function writeTargets(view: CommandView): string[] {
  const args = view.args;
  const targetDir = args.findIndex((a) => a === '-t' || a === '--target-directory');
  const inline = args.find((a) => a.startsWith('--target-directory='));
  if (inline !== undefined) return [inline.slice('--target-directory='.length)];
  if (targetDir >= 0) return [args[targetDir + 1] ?? ''];
  switch (view.head) {
    case 'cp':
    case 'mv':
    case 'ln':
    case 'install':
    case 'rsync':
    case 'scp':
      return operands(args).slice(-1);
    case 'tee':
    case 'touch':
    case 'mkdir':
    case 'truncate':
    case 'rm':
    case 'rmdir':
    case 'unlink':
    case 'shred':
    case 'chmod':
    case 'chown':
    case 'chgrp':
      return operands(args);
    case 'sed':
      // `sed -i SCRIPT FILE…` edits the files in place; without -e/-f the first operand is the script.
      if (!hasFlag(args, 'i', '--in-place')) return [];
      return hasFlag(args, 'e', '--expression') || hasFlag(args, 'f', '--file')
        ? operands(args)
        : operands(args).slice(1);
    case 'dd':
      return args.filter((a) => a.startsWith('of=')).map((a) => a.slice(3));
    default:
      return [];
  }
}

function gitSubcommand(args: readonly string[]): { sub: string; rest: string[] } {
  let i = 0;
  while (i < args.length && (args[i] ?? '').startsWith('-')) {
    // `-C dir` and `-c key=value` take a value.
    i += args[i] === '-C' || args[i] === '-c' ? 2 : 1;
  }
  return { sub: args[i] ?? '', rest: args.slice(i + 1) };
}

/** Does this text (a substitution body) run a downloader anywhere? */
function downloads(body: string): boolean {
  return parseShell(body).pipelines.some((p) => p.some((c) => DOWNLOADERS.has(viewCommand(c)?.head ?? '')));
}

const BROAD_PATHS = new Set(['/', '~', '$HOME', '${HOME}', '/*', '~/*', '*', '.', './', '..']);

export const DANGER_RULES: readonly DangerRule[] = [
  {
    rule: 'privilege-escalation',
    reason: 'runs a command as another user (sudo/su/doas)',
    matches: (v) => PRIVILEGE.has(v.head),
  },
  {
    rule: 'download-to-shell',
    reason: 'pipes a download straight into a shell or interpreter',
    matches: (v, c) =>
      INTERPRETERS.has(v.head) &&
      (c.pipeline.slice(0, c.index).some((earlier) => DOWNLOADERS.has(earlier.head)) ||
        v.substitutions.some(downloads)),
  },
  {
    rule: 'recursive-delete',
    reason: 'deletes files recursively',
    matches: (v) =>
      (v.head === 'rm' && hasFlag(v.args, 'r', '--recursive')) ||
      (v.head === 'rm' && hasFlag(v.args, 'R')) ||
      (v.head === 'find' && v.args.some((a) => a === '-delete')) ||
      (v.head === 'find' &&
        v.args.some(
          (a, i) => (a === '-exec' || a === '-execdir') && ['rm', 'shred'].includes(v.args[i + 1] ?? ''),
        )) ||
      v.head === 'shred',
  },
  {
    rule: 'disk-tool',
    reason: 'runs a disk or filesystem tool (partitioning, formatting, mounting)',
    matches: (v) =>
      DISK_TOOLS.has(v.head) ||
      v.head.startsWith('mkfs') ||
      v.head === 'mke2fs' ||
      (v.head === 'dd' && v.args.some((a) => a.startsWith('of=') && isDevice(a.slice(3)))),
  },
  {
    rule: 'device-write',
    reason: 'writes directly to a device file',
    matches: (v) => v.redirects.some((r) => r.op.includes('>') && isDevice(r.target)),
  },
  {
    rule: 'recursive-permission-change',
    reason: 'changes ownership or permissions recursively on a broad path or outside the cwd',
    matches: (v, c) =>
      ['chmod', 'chown', 'chgrp'].includes(v.head) &&
      hasFlag(v.args, 'R', '--recursive') &&
      operands(v.args).some((t) => BROAD_PATHS.has(t) || escapesCwd(t, c.cwd, c.dir)),
  },
  {
    rule: 'git-force-push',
    reason: 'force-pushes, which can overwrite history on the remote',
    matches: (v) => {
      if (v.head !== 'git') return false;
      const { sub, rest } = gitSubcommand(v.args);
      return (
        sub === 'push' &&
        (hasFlag(rest, 'f', '--force', '--force-with-lease', '--force-if-includes', '--mirror') ||
          operands(rest).some((r) => r.startsWith('+')))
      );
    },
  },
  {
    rule: 'git-discard',
    reason: 'discards uncommitted work (git reset --hard / git clean -f)',
    matches: (v) => {
      if (v.head !== 'git') return false;
      const { sub, rest } = gitSubcommand(v.args);
      return (
        (sub === 'reset' && rest.includes('--hard')) || (sub === 'clean' && hasFlag(rest, 'f', '--force'))
      );
    },
  },
  {
    rule: 'mass-kill',
    reason: 'kills every process it can reach, or processes by name',
    matches: (v) =>
      v.head === 'killall' ||
      v.head === 'pkill' ||
      (v.head === 'kill' && v.args.some((a, i) => a === '-1' && i > 0 && v.args[i - 1] !== '-s')) ||
      (v.head === 'kill' && v.args.includes('--') && v.args.slice(v.args.indexOf('--')).includes('-1')),
  },
  {
    rule: 'power',
    reason: 'shuts down or restarts the machine',
    matches: (v) =>
      POWER.has(v.head) ||
      (v.head === 'init' && ['0', '6'].includes(v.args[0] ?? '')) ||
      (v.head === 'systemctl' &&
        v.args.some((a) => ['poweroff', 'reboot', 'halt', 'kexec', 'suspend', 'hibernate'].includes(a))),
  },
  {
    rule: 'system-package',
    reason: 'installs or removes system packages',
    matches: (v) =>
      (PACKAGE_MANAGERS.has(v.head) && v.args.some((a) => PACKAGE_VERBS.has(a))) ||
      (v.head === 'pacman' && v.args.some((a) => /^-[SRU]/.test(a))) ||
      (v.head === 'dpkg' && hasFlag(v.args, '', '--install', '--remove', '--purge')) ||
      (v.head === 'dpkg' && v.args.some((a) => /^-[irP]$/.test(a))) ||
      (v.head === 'rpm' && v.args.some((a) => /^-[iUe]/.test(a) || ['--install', '--erase'].includes(a))),
  },
  {
    rule: 'write-outside-cwd',
    reason: 'writes, moves or deletes files outside the working directory',
    matches: (v, c) =>
      v.redirects.some((r) => (r.op.includes('>') || r.op === '<>') && escapesCwd(r.target, c.cwd, c.dir)) ||
      writeTargets(v).some((t) => escapesCwd(t, c.cwd, c.dir)),
  },
];

/** Rules on the raw line, for shapes that are not a single command. */
export const LINE_RULES: readonly { rule: string; reason: string; pattern: RegExp }[] = [
  {
    rule: 'fork-bomb',
    reason: 'defines a function that endlessly spawns copies of itself (fork bomb)',
    // `name(){ name|name& };name` with any name, spacing optional.
    pattern: /([A-Za-z_:.][\w:.]*)\s*\(\)\s*\{[^}]*\1\s*\|\s*\1\s*&/,
  },
];
