/**
 * Run as a process of its own by daemon.test.ts: a daemon with the CLI's signal handling is stopped
 * by a SIGTERM, and once it has stopped, before this process exits, a second SIGTERM arrives (a
 * supervisor's or a test's own stop, sent while the first one drained). Prints the stop's exit code;
 * this process then exits with it, unless the late signal ended it first.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../../src/daemon/config.js';
import { runDaemon } from '../../../src/daemon/daemon.js';
import { homeLayout } from '../../../src/daemon/home.js';
import { createLogger } from '../../../src/daemon/logger.js';

const layout = homeLayout(join(mkdtempSync(join(tmpdir(), 'gh-late-signal-')), 'home'));
const { config } = parseConfig('', layout.configFile);
const handle = await runDaemon({
  layout,
  config,
  configFile: layout.configFile,
  logger: createLogger({ file: layout.logFile }),
  services: [],
  handleSignals: true,
});
// A real daemon's listeners keep the event loop alive until it stops; here a timer does.
setInterval(() => undefined, 60_000);
process.kill(process.pid, 'SIGTERM');
const code = await handle.done;
// Delivered before kill() returns: with no handler of the daemon left, the default action ends
// the process here, and a clean stop is reported as a death by SIGTERM.
process.kill(process.pid, 'SIGTERM');
process.stdout.write(`stopped ${code}\n`);
setImmediate(() => process.exit(code));
