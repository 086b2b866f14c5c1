import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { gatewayState } from '../../../daemon/gateway-state.js';
import { cliHome, say } from '../shared.js';

/** The dashboard's address: the page is served at `/` of the daemon's listener. */
export function dashboardUrl(listenerUrl: string): string {
  return `${listenerUrl.replace(/\/$/, '')}/`;
}

/** Runs xdg-open; resolves false when it is missing or fails (no desktop, a server, a container). */
function openInBrowser(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn('xdg-open', [url], { stdio: 'ignore', detached: true });
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
    child.unref();
  });
}

export function registerDashboard(program: Command): void {
  program
    .command('dashboard')
    .description('print the web dashboard URL of the running gateway (and open it with --open)')
    .option('--open', 'open it in the desktop browser (xdg-open)')
    .action(async (options: { open?: boolean }) => {
      const state = gatewayState(cliHome());
      if (state.status !== 'running' || !state.info.url) {
        process.stderr.write(
          'gatehouse: the gateway is not running, so there is no dashboard to open. Start it with "gatehouse start".\n',
        );
        process.exitCode = 1;
        return;
      }
      const url = dashboardUrl(state.info.url);
      say(url);
      if (!options.open) return;
      if (!(await openInBrowser(url))) {
        process.stderr.write(
          `gatehouse: could not open a browser (xdg-open is missing or failed); open ${url} yourself.\n`,
        );
        process.exitCode = 1;
      }
    });
}
