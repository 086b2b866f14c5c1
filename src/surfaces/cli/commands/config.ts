import type { Command } from 'commander';
import { stringify } from 'yaml';
import { maskConfig } from '../../../daemon/config-secrets.js';
import { cliHome, loadCliConfig, say } from '../shared.js';

export function registerConfig(program: Command): void {
  program
    .command('config')
    .description('show the effective configuration (defaults filled in, secrets masked)')
    .option('--json', 'print JSON instead of YAML')
    .action((options: { json?: boolean }) => {
      const loaded = loadCliConfig(cliHome());
      const masked = maskConfig(loaded.config);
      if (options.json) {
        say(JSON.stringify(masked, null, 2));
        return;
      }
      say(`# effective configuration from ${loaded.file} (defaults filled in, secrets masked)`);
      process.stdout.write(stringify(masked));
    });
}
