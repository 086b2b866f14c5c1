import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { DaemonError } from '../../../daemon/errors.js';
import { cliHome, say, type CliDeps } from '../shared.js';

const PURPOSES = ['interactive', 'worker-adoption'];

export function registerTicket(program: Command, deps: CliDeps): void {
  program
    .command('ticket')
    .description('print a single-use, 30-second session ticket from the running gateway (for scripts)')
    .option('--purpose <purpose>', `what the ticket is for: ${PURPOSES.join(' | ')}`, 'interactive')
    .action(async (options: { purpose: string }) => {
      if (!PURPOSES.includes(options.purpose)) {
        throw new DaemonError('invalid_input', `--purpose must be one of ${PURPOSES.join(', ')}`);
      }
      const layout = cliHome();
      if (!existsSync(layout.controlSocket)) {
        throw new DaemonError(
          'not_running',
          `tickets come from a running gateway, and none is listening on ${layout.controlSocket}: start it with "gatehouse start"`,
        );
      }
      if (!deps.requestTicket) {
        throw new DaemonError(
          'not_available',
          'this build cannot request tickets yet (no control-socket client)',
        );
      }
      say(await deps.requestTicket(layout, options.purpose));
    });
}
