import type { Command } from 'commander';
import { DaemonError } from '../../../daemon/errors.js';
import type { CliDeps } from '../shared.js';

export function registerDemoModel(program: Command, deps: CliDeps): void {
  program
    .command('demo-model')
    .description('serve the built-in demo model alone, as an OpenAI-compatible endpoint')
    .option('--port <port>', 'port on 127.0.0.1 (0 = any free port)', '0')
    .action(async (options: { port: string }) => {
      const port = Number(options.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        throw new DaemonError(
          'invalid_input',
          `--port must be a number from 0 to 65535, not "${options.port}"`,
        );
      }
      if (!deps.runDemoModel) {
        throw new DaemonError('not_available', 'the standalone demo model is not part of this build yet');
      }
      await deps.runDemoModel({ port });
    });
}
