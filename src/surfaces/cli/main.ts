/**
 * The `gatehouse` command. Every failure ends here as one line on stderr and a non-zero exit
 * (SPEC UX-3); the stack goes nowhere near the terminal unless GATEHOUSE_DEBUG is set. The daemon's
 * modules and each command's own are loaded only when a command needs them (program.ts).
 */
import { DaemonError, oneLine } from '../../daemon/errors.js';
import { buildProgram } from './program.js';

/** A refusal from the gateway's control socket (say, too many unredeemed tickets) is what happened. */
async function controlRefusal(error: unknown): Promise<boolean> {
  // Loaded here, not above: a command that never reached the socket has no such error to report.
  const { ControlRequestError } = await import('../control/client.js');
  return error instanceof ControlRequestError;
}

async function report(error: unknown): Promise<never> {
  const known = error instanceof DaemonError || (await controlRefusal(error));
  const message = known && error instanceof Error ? error.message : `unexpected error: ${oneLine(error)}`;
  process.stderr.write(`gatehouse: ${message}\n`);
  if (process.env['GATEHOUSE_DEBUG'] && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  process.exit(1);
}

/**
 * A reader that went away (`gatehouse status | head -1`) is not a failure: the command has nothing
 * left to say to anyone, so it ends quietly, as `cat` does. Anything else on stdout is reported like
 * every other failure. `serve` keeps running: its output is a courtesy, its sessions are not.
 */
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (process.argv[2] === 'serve') return;
  if (error.code !== 'EPIPE') return void report(error);
  process.exit(0);
});
// The same for stderr (`gatehouse config 2>&1 | head -1`): with nobody reading, nothing is left to
// report to; the exit code still says whether the command failed.
process.stderr.on('error', () => {
  if (process.argv[2] !== 'serve') process.exit(process.exitCode ?? 0);
});

// Not a top-level await: the bin runs this module as one CommonJS bundle from V8's code cache
// (scripts/bundle.js, src/surfaces/cli/bin.ts), and CommonJS has none.
buildProgram({
  services: async (loaded, env) =>
    (await import('../../daemon/services/index.js')).defaultServices(loaded, { env }),
  runDemoModel: async (options) => (await import('./commands/demo-model.js')).serveDemoModel(options),
})
  .parseAsync(process.argv)
  .catch(report);
