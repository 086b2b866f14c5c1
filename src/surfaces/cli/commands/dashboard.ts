import { spawn } from 'node:child_process';
import { gatewayState } from '../../../daemon/gateway-state.js';
import { cliHome, say } from '../shared.js';

/** The dashboard's address: the page is served at `/` of the daemon's listener. */
export function dashboardUrl(listenerUrl: string): string {
  return `${listenerUrl.replace(/\/$/, '')}/`;
}

/** How long xdg-open may take to hand the URL over before the command stops waiting for it. */
const OPEN_WAIT_MS = 5_000;

/**
 * Runs xdg-open; resolves false when it is missing or fails (no desktop, a server, a container).
 * The child is waited for, not unref'd at once: with nothing else keeping Node alive, an unref'd
 * child would let the process end with this promise unsettled (exit code 13). One that is still
 * running after OPEN_WAIT_MS (a browser started in its place) is let go, detached.
 */
function openInBrowser(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn('xdg-open', [url], { stdio: 'ignore', detached: true });
    const letGo = setTimeout(() => {
      child.unref();
      resolve(true);
    }, OPEN_WAIT_MS);
    const settle = (opened: boolean) => {
      clearTimeout(letGo);
      resolve(opened);
    };
    child.once('error', () => settle(false));
    child.once('exit', (code) => settle(code === 0));
  });
}

/** `gatehouse dashboard`: the running gateway's dashboard URL, opened in a browser with --open. */
export async function dashboard(options: { open?: boolean }): Promise<void> {
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
}
