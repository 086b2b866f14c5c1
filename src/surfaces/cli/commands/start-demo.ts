import type { Command } from 'commander';
import { initHome } from '../../../daemon/home.js';
import { cliHome, say } from '../shared.js';
import { printStatus, statusReport } from './status.js';

/** What `npm start` runs: prepare the home on its defaults, then show where things stand. */
export function registerStartDemo(program: Command): void {
  program
    .command('start-demo', { hidden: true })
    .description('prepare the home with defaults and show the gateway status (what `npm start` runs)')
    .action(() => {
      const layout = cliHome();
      const { createdConfig } = initHome(layout);
      if (createdConfig) say(`Created ${layout.configFile} with the defaults (built-in demo model).`);
      printStatus(statusReport(layout));
      say('');
      say('Next: "gatehouse start" runs the gateway in the background, "gatehouse serve" in the foreground.');
    });
}
