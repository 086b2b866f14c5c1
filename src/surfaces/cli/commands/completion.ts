/**
 * `gatehouse completion bash|zsh|fish`: a completion script for the shell, generated from the very
 * command tree `gatehouse --help` shows (program.ts), so a new command or option completes without
 * anyone editing a script. It completes command and subcommand names and their options; values are
 * left to the shell's own file completion.
 */
import type { Command } from 'commander';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

interface Node {
  name: string;
  summary: string;
  options: { flag: string; summary: string }[];
  /** Fixed choices of its first argument (the shell names of `completion`). */
  choices: string[];
  children: Node[];
}

function nodeOf(command: Command): Node {
  return {
    name: command.name(),
    summary: command.description(),
    options: [
      ...command.options.map((o) => ({ flag: o.long ?? o.short ?? '', summary: o.description })),
      { flag: '--help', summary: 'show help' },
    ].filter((o) => o.flag !== ''),
    choices: command.name() === 'completion' ? [...SHELLS] : [],
    children: command.commands.map(nodeOf),
  };
}

const words = (node: Node): string =>
  [...node.children.map((c) => c.name), ...node.choices, ...node.options.map((o) => o.flag)].join(' ');

function bash(root: Node): string {
  const cases = root.children.map((command) => {
    const inner = command.children.map((sub) => `        ${sub.name}) words="${words(sub)}" ;;`);
    const body =
      inner.length === 0
        ? `words="${words(command)}"`
        : `case "$sub" in\n${inner.join('\n')}\n        *) words="${words(command)}" ;;\n      esac`;
    return `    ${command.name})\n      ${body}\n      ;;`;
  });
  return `# gatehouse completion for bash: eval "$(gatehouse completion bash)", e.g. in ~/.bashrc
_gatehouse() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" cmd="" sub="" words="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in
      -*) ;;
      *) if [[ -z "$cmd" ]]; then cmd="\${COMP_WORDS[i]}"; elif [[ -z "$sub" ]]; then sub="\${COMP_WORDS[i]}"; fi ;;
    esac
  done
  case "$cmd" in
    "") words="${words(root)}" ;;
${cases.join('\n')}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _gatehouse gatehouse
`;
}

function zsh(root: Node): string {
  // zsh runs the bash function through its own bashcompinit: one script, one behaviour.
  return `# gatehouse completion for zsh: eval "$(gatehouse completion zsh)", e.g. in ~/.zshrc
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bash(root).split('\n').slice(1).join('\n')}`;
}

const quote = (text: string): string => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

function fish(root: Node): string {
  const lines = [
    '# gatehouse completion for fish: gatehouse completion fish | source',
    'complete -c gatehouse -f',
  ];
  const top = root.children.map((c) => c.name).join(' ');
  for (const command of root.children) {
    lines.push(
      `complete -c gatehouse -n "not __fish_seen_subcommand_from ${top}" -a ${command.name} -d ${quote(command.summary)}`,
    );
    const subs = command.children.map((c) => c.name).join(' ');
    const here = `__fish_seen_subcommand_from ${command.name}`;
    for (const sub of command.children) {
      lines.push(
        `complete -c gatehouse -n "${here}; and not __fish_seen_subcommand_from ${subs}" -a ${sub.name} -d ${quote(sub.summary)}`,
      );
      for (const o of sub.options) {
        lines.push(
          `complete -c gatehouse -n "${here}; and __fish_seen_subcommand_from ${sub.name}" -l ${o.flag.replace(/^--/, '')} -d ${quote(o.summary)}`,
        );
      }
    }
    for (const choice of command.choices) lines.push(`complete -c gatehouse -n "${here}" -a ${choice}`);
    for (const o of command.options) {
      lines.push(`complete -c gatehouse -n "${here}" -l ${o.flag.replace(/^--/, '')} -d ${quote(o.summary)}`);
    }
  }
  for (const o of root.options) {
    lines.push(
      `complete -c gatehouse -n "not __fish_seen_subcommand_from ${top}" -l ${o.flag.replace(/^--/, '')} -d ${quote(o.summary)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The script for `shell`, from the program's command tree. */
export function completionScript(program: Command, shell: Shell): string {
  const root = nodeOf(program);
  if (shell === 'bash') return bash(root);
  if (shell === 'zsh') return zsh(root);
  return fish(root);
}
