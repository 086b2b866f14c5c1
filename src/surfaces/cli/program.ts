/**
 * The `gatehouse` command tree: each command's name, options and help. What a command does lives in
 * its own file under commands/, which its action loads when the command runs (`await import()`), so
 * `gatehouse --help` or `gatehouse status` loads commander and little else: not the daemon, the
 * stores, the chat platforms' SDKs or the chat client (docs/decisions.md, issue 33). Keep this file's
 * imports to commander and constants.
 */
import { Argument, Command, Option } from 'commander';
import { DEFAULT_PORT } from '../../daemon/default-port.js';
import { MIN_PASSWORD_LENGTH } from '../../domain/auth/password.js';
import type { ChatFlags } from './commands/chat.js';
import type { SessionsFlags } from './commands/sessions.js';
import type { AddFlags } from './commands/jobs.js';
import type { CliDeps } from './shared.js';
import { packageVersion } from './version.js';

/** What `gatehouse ticket --purpose` accepts. */
export const TICKET_PURPOSES = ['interactive', 'worker-adoption'] as const;

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

const PORT_HELP = `listen on this port (overrides listener.port; default ${DEFAULT_PORT}; 0 = any free port)`;
const HOST_HELP = 'listen on this address (overrides listener.host)';

export function buildProgram(deps: CliDeps): Command {
  const program = new Command('gatehouse')
    .description('A crash-safe session gateway for AI agents. Home: $GATEHOUSE_HOME or ~/.gatehouse.')
    .version(packageVersion(), '-V, --version', 'print the version of this gatehouse')
    .showHelpAfterError('(run "gatehouse --help" for the commands)')
    .configureOutput({
      outputError: (text, write) => write(`gatehouse: ${text.replace(/^error: /, '')}`),
    });

  program
    .command('serve')
    .description('run the gateway in the foreground (Ctrl-C or SIGTERM drains and stops it)')
    .option('--log-stderr', 'also write log lines to stderr')
    .option('--port <n>', PORT_HELP)
    .option('--host <address>', HOST_HELP)
    .action(async (options: { logStderr?: boolean; port?: string; host?: string }) => {
      // Before the daemon's modules load: their loading is what would grow the young generation,
      // and what V8 would compile optimised code for (serve gives the tiers back once ready).
      const allocator = await import('../../daemon/allocator.js');
      allocator.keepYoungGenerationSmall();
      allocator.holdOptimisingTiers();
      await (await import('./commands/serve.js')).serve(options, deps);
    });

  program
    .command('start')
    .description('start the gateway in the background and print its URL')
    .option('--port <n>', PORT_HELP)
    .option('--host <address>', HOST_HELP)
    .action(async (flags: { port?: string; host?: string }) =>
      (await import('./commands/start.js')).start(flags),
    );

  program
    .command('stop')
    .description('drain and stop the background gateway')
    .action(async () => (await import('./commands/stop.js')).stop());

  program
    .command('status')
    .description('say whether the gateway is running, where, and with which model')
    .option('--json', 'print a JSON object for scripts')
    .action(async (options: { json?: boolean }) => (await import('./commands/status.js')).status(options));

  const configCommand = program
    .command('config')
    .description('show the effective configuration (defaults filled in, secrets masked)')
    .option('--json', 'print JSON instead of YAML')
    .action(async (options: { json?: boolean }) =>
      (await import('./commands/config.js')).showConfig(options),
    );
  configCommand
    .command('get')
    .description('print one key of the effective configuration, e.g. listener.port')
    .argument('<key>', 'the dotted path of the key')
    .action(async (key: string) => (await import('./commands/config-edit.js')).configGet(key));
  configCommand
    .command('set')
    .description('set one key in config.yaml (validated first; comments kept)')
    .argument('<key>', 'the dotted path of the key, e.g. sessions.max_age_days')
    .argument('<value>', 'the value, read as YAML: 8080 is a number, true a boolean')
    .action(async (key: string, value: string) =>
      (await import('./commands/config-edit.js')).configSet(key, value),
    );

  program
    .command('passwd')
    .description(
      `set the dashboard password, at least ${MIN_PASSWORD_LENGTH} characters (read from stdin; only its hash is stored)`,
    )
    .action(async () => (await import('./commands/passwd.js')).passwd());

  program
    .command('ticket')
    .description('print a single-use, 30-second session ticket from the running gateway (for scripts)')
    .option('--purpose <purpose>', `what the ticket is for: ${TICKET_PURPOSES.join(' | ')}`, 'interactive')
    .option(
      '--session <id>',
      'worker-adoption: a session the ticket may read, submit to and answer (repeatable)',
      collect,
      [],
    )
    .option('--member <name>', 'interactive: a ticket for the member member:<name>, not the owner')
    .option('--json', 'print {"ticket", "expires_at", "purpose", "sessions"} as JSON')
    .action(async (flags: { purpose: string; session: string[]; member?: string; json?: boolean }) =>
      (await import('./commands/ticket.js')).ticket(flags),
    );

  program
    .command('chat')
    .description('chat with an agent in a gateway session (starts the gateway when it is not running)')
    .option('--resume <id>', 'attach to an existing session instead of creating one')
    .option('--continue', 'attach to the newest session (the one gatehouse sessions lists first)')
    .option('--cwd <dir>', 'working directory of a new session (default: the current directory)')
    .option('--model <name>', 'model of a new session (default: the gateway’s)')
    .option(
      '--checkpoints',
      'a new session saves the working directory before each tool call that may change it',
    )
    .option(
      '--accept-hooks',
      'a new session also runs the hooks the project declares in .gatehouse/hooks.yaml',
    )
    .addOption(new Option('--source <source>', 'which client this is').choices(['cli', 'tui']).default('cli'))
    .action(async (flags: ChatFlags) => (await import('./commands/chat.js')).chat(flags));

  program
    .command('acp')
    .description(
      'speak the Agent Client Protocol on stdin/stdout for an editor (starts the gateway when it is not running)',
    )
    .action(async () => (await import('./commands/acp.js')).acp());

  const sessionsCommand = program
    .command('sessions')
    .description('list stored sessions, or search their messages (starts the gateway when needed)')
    .option('--json', 'print JSON for scripts')
    .option('--search <text>', 'full-text search over the messages: every word must appear')
    .option('--fts', 'read --search as SQLite FTS5 query syntax (phrases, prefix*, OR, NOT)')
    .option('--show <id>', "print a session's whole history, across its compressions")
    .option(
      '--model-view',
      'with --show: print what the model sees now (system prompt, summary, recent messages)',
    )
    .option('--limit <n>', 'at most this many rows (1-500)', '50')
    .option('--archived', 'list the archived sessions instead of the others')
    .action(async (flags: SessionsFlags) => (await import('./commands/sessions.js')).sessions(flags));
  sessionsCommand
    .command('rename')
    .description('give a session a new title')
    .argument('<id>', 'the session id')
    .argument('<title>', 'the new title (one line, up to 80 characters)')
    .action(async (id: string, title: string) =>
      (await import('./commands/session-manage.js')).renameSession(id, title),
    );
  sessionsCommand
    .command('archive')
    .description('hide a session from the lists (still searchable; "sessions --archived" lists it)')
    .argument('<id>', 'the session id')
    .action(async (id: string) => (await import('./commands/session-manage.js')).archiveSession(id, true));
  sessionsCommand
    .command('unarchive')
    .description('list an archived session again')
    .argument('<id>', 'the session id')
    .action(async (id: string) => (await import('./commands/session-manage.js')).archiveSession(id, false));
  sessionsCommand
    .command('delete')
    .description('delete a session and everything stored for it (asks first)')
    .argument('<id>', 'the session id')
    .option('--yes', 'do not ask')
    .action(async (id: string, flags: { yes?: boolean }) =>
      (await import('./commands/session-manage.js')).deleteSession(id, flags),
    );

  const approvals = program
    .command('approvals')
    .description('list or revoke remembered approvals ("session" and "always" answers)');
  approvals
    .command('list')
    .description('list remembered approvals: id, scope, where, and the exact command they approve')
    .option('--json', 'print {"approvals": [...]} as JSON')
    .action(async (flags: { json?: boolean }) =>
      (await import('./commands/approvals.js')).listApprovals(flags),
    );
  approvals
    .command('revoke <id>')
    .description('forget a remembered approval (its id from "gatehouse approvals list")')
    .action(async (id: string) => (await import('./commands/approvals.js')).revokeApproval(id));

  const jobs = program
    .command('jobs')
    .description('scheduled jobs: text admitted to a session on a schedule (docs/scheduling.md)');
  jobs
    .command('add')
    .description('add a job: one schedule (--cron, --every or --at), one target (--session or --new-session)')
    .option('--cron <expr>', 'a five-field cron expression, e.g. "0 8 * * *"')
    .option('--tz <zone>', 'the IANA time zone of --cron (default UTC)')
    .option('--every <seconds>', 'an interval in seconds (at least 10), counted from now')
    .option('--at <instant>', 'one run at this ISO 8601 instant')
    .option('--session <id>', 'admit into this existing session')
    .option('--new-session', 'create a new session for each run')
    .option('--cwd <dir>', "with --new-session: the new sessions' working directory")
    .requiredOption('--text <text>', 'the text admitted at each run')
    .option('--name <name>', 'a name to tell the job by')
    .addOption(
      new Option('--catch-up <policy>', 'missed runs after downtime').choices(['none', 'last', 'all']),
    )
    .option(
      '--freshness <seconds>',
      'runs older than this are missed whatever --catch-up says (default 3600)',
    )
    .addOption(
      new Option('--overlap <policy>', 'when the previous run is still going').choices(['skip', 'queue']),
    )
    .option('--max-failures <n>', 'pause the job after this many failed runs in a row (default 3)')
    .option(
      '--deliver <where>',
      'where the result goes: session (default), or home:<platform> (also its home channel)',
    )
    .option('--request-id <id>', 'repeat an add safely: the same id answers the same job')
    .option('--json', 'print {"job": {...}} as JSON')
    .action(async (flags: AddFlags) => (await import('./commands/jobs.js')).addJob(flags));
  jobs
    .command('list')
    .description('list jobs: schedule, target, state, next and last run with its outcome')
    .option('--json', 'print {"jobs": [...]} as JSON')
    .action(async (flags: { json?: boolean }) => (await import('./commands/jobs.js')).listJobs(flags));
  for (const [action, what] of [
    ['pause', 'stop firing the job until it is resumed'],
    ['resume', 'fire the job again (its failure count starts again)'],
    ['remove', 'delete the job and its run history'],
  ] as const) {
    jobs
      .command(`${action} <id>`)
      .description(what)
      .action(async (id: string) => (await import('./commands/jobs.js')).changeJob(action, id));
  }
  jobs
    .command('run-now <id>')
    .description('run the job once now, outside its schedule (refused while its previous run is going)')
    .option('--request-id <id>', 'repeat safely: the same id admits nothing more')
    .option('--json', 'print the run as JSON')
    .action(async (id: string, flags: { requestId?: string; json?: boolean }) =>
      (await import('./commands/jobs.js')).runJobNow(id, flags),
    );

  const delegations = program
    .command('delegations')
    .description('background delegations: tasks a session handed to a child session (docs/scheduling.md)');
  delegations
    .command('list')
    .description('list delegations: parent → child, state, outcome and task')
    .option('--session <id>', "only this session's delegations")
    .option('--json', 'print {"delegations": [...]} as JSON')
    .action(async (flags: { session?: string; json?: boolean }) =>
      (await import('./commands/delegations.js')).listDelegations(flags),
    );
  delegations
    .command('stop <id>')
    .description("stop the delegation: its child's task is interrupted and nothing is reported")
    .action(async (id: string) => (await import('./commands/delegations.js')).stopDelegation(id));
  delegations
    .command('keep <id>')
    .description('keep the delegation going when its parent session is reset (/new, /reset)')
    .action(async (id: string) => (await import('./commands/delegations.js')).keepDelegation(id));

  program
    .command('share <session> <member>')
    .description('share a session with a member (member:<name>, or an oidc:… subject from "gatehouse audit")')
    .option('--level <level>', 'read | submit | full', 'read')
    .action(async (session: string, member: string, flags: { level: string }) =>
      (await import('./commands/access.js')).share(session, member, flags),
    );
  program
    .command('unshare <session> <member>')
    .description("revoke a member's share of a session; their live viewers are detached at once")
    .action(async (session: string, member: string) =>
      (await import('./commands/access.js')).unshare(session, member),
    );
  program
    .command('shares <session>')
    .description('list the members a session is shared with, and their levels')
    .option('--json', 'print {"shares": [...]} as JSON')
    .action(async (session: string, flags: { json?: boolean }) =>
      (await import('./commands/access.js')).shares(session, flags),
    );
  program
    .command('audit')
    .description(
      'who created, submitted, approved, denied, answered, interrupted, reset, shared and signed in',
    )
    .option('--limit <n>', 'the newest N rows (1..500)', '50')
    .option('--session <id>', "only this session's rows")
    .option('--principal <subject>', "only this principal's rows (e.g. member:alice)")
    .option('--json', 'print {"rows": [...]} as JSON, newest first')
    .action(async (flags: { limit: string; session?: string; principal?: string; json?: boolean }) =>
      (await import('./commands/access.js')).audit(flags),
    );
  const budget = program
    .command('budget')
    .description("a session's budget: what is spent, raise it, or let it run one more turn (docs/cost.md)");
  budget
    .command('show <session_id>')
    .description("what the session, your day and the gateway's day have spent, against their limits")
    .option('--json', 'print the session.budget answer as JSON')
    .action(async (id: string, flags: { json?: boolean }) =>
      (await import('./commands/budget.js')).budgetShow(id, flags),
    );
  budget
    .command('raise <session_id>')
    .description("raise the session's own limit (operators), lifting its pause")
    .option('--tokens <n>', 'the new token limit')
    .option('--usd <x>', 'the new limit in US dollars')
    .action(async (id: string, flags: { tokens?: string; usd?: string }) =>
      (await import('./commands/budget.js')).budgetRaise(id, flags),
    );
  budget
    .command('continue <session_id>')
    .description('let a session its budget paused run one more turn')
    .action(async (id: string) => (await import('./commands/budget.js')).budgetContinue(id));

  program
    .command('skills')
    .description('list the skills of the home (<home>/skills/<name>/SKILL.md): name, description, path')
    .option('--json', 'print JSON: [{name, description, path}]')
    .action(async (options: { json?: boolean }) => (await import('./commands/skills.js')).skills(options));

  program
    .command('backup [path]')
    .description(
      'copy a profile’s state database to PATH (default <home>/backups/<profile>-<time>.db), online and owner-only',
    )
    .option('--profile <name>', 'which profile (default: default_profile)')
    .action(async (path: string | undefined, flags: { profile?: string }) =>
      (await import('./commands/backup.js')).backup(path, flags),
    );

  program
    .command('restore <file>')
    .description(
      'put a backup back as a profile’s state database (the gateway stopped; the replaced one is kept)',
    )
    .option('--profile <name>', 'which profile (default: default_profile)')
    .action(async (file: string, flags: { profile?: string }) =>
      (await import('./commands/restore.js')).restore(file, flags),
    );

  program
    .command('doctor')
    .description(
      'check the home, config, databases and search indexes, and say what to do about each problem',
    )
    .option('--json', 'print {"ok", "checks": [{name, ok, detail, fix}]} for scripts')
    .option('--repair-search', 'rebuild a broken search index from the stored messages (gateway stopped)')
    .action(async (flags: { json?: boolean; repairSearch?: boolean }) =>
      (await import('./commands/doctor.js')).doctor(flags),
    );

  program
    .command('demo-model')
    .description(
      'serve the built-in demo model (a scripted stand-in) alone, as an OpenAI-compatible endpoint',
    )
    .option('--port <port>', 'port on 127.0.0.1 (0 = any free port)', '0')
    .option('--latency-ms <ms>', 'pause between two streamed pieces, in milliseconds', '0')
    .action(async (options: { port: string; latencyMs: string }) =>
      (await import('./commands/demo-model.js')).demoModel(options, deps),
    );

  program
    .command('dashboard')
    .description('print the web dashboard URL of the running gateway (and open it with --open)')
    .option('--open', 'open it in the desktop browser (xdg-open)')
    .action(async (options: { open?: boolean }) =>
      (await import('./commands/dashboard.js')).dashboard(options),
    );
  program
    .command('completion')
    .description(
      'print a shell completion script: eval "$(gatehouse completion bash)" (or zsh; fish: | source)',
    )
    .addArgument(new Argument('<shell>', 'the shell').choices(['bash', 'zsh', 'fish']))
    .action(async (shell: 'bash' | 'zsh' | 'fish') => {
      const { completionScript } = await import('./commands/completion.js');
      process.stdout.write(completionScript(program, shell));
    });
  return program;
}
