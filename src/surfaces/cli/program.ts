/** The `gatehouse` command tree. Each command lives in its own file under commands/. */
import { Command } from 'commander';
import { registerBackup } from './commands/backup.js';
import { registerChat } from './commands/chat.js';
import { registerConfig } from './commands/config.js';
import { registerDashboard } from './commands/dashboard.js';
import { registerDemoModel } from './commands/demo-model.js';
import { registerDoctor } from './commands/doctor.js';
import { registerPasswd } from './commands/passwd.js';
import { registerServe } from './commands/serve.js';
import { registerSessions } from './commands/sessions.js';
import { registerSkills } from './commands/skills.js';
import { registerStart } from './commands/start.js';
import { registerStatus } from './commands/status.js';
import { registerStop } from './commands/stop.js';
import { registerTicket } from './commands/ticket.js';
import type { CliDeps } from './shared.js';

export function buildProgram(deps: CliDeps): Command {
  const program = new Command('gatehouse')
    .description('A crash-safe session gateway for AI agents. Home: $GATEHOUSE_HOME or ~/.gatehouse.')
    .showHelpAfterError('(run "gatehouse --help" for the commands)')
    .configureOutput({
      outputError: (text, write) => write(`gatehouse: ${text.replace(/^error: /, '')}`),
    });
  registerServe(program, deps);
  registerStart(program);
  registerStop(program);
  registerStatus(program);
  registerConfig(program);
  registerPasswd(program);
  registerTicket(program);
  registerChat(program);
  registerSessions(program);
  registerSkills(program);
  registerBackup(program);
  registerDoctor(program);
  registerDemoModel(program, deps);
  registerDashboard(program);
  return program;
}
