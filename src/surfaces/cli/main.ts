#!/usr/bin/env node
/**
 * The `gatehouse` command. Every failure ends here as one line on stderr and a non-zero exit
 * (SPEC UX-3); the stack goes nowhere near the terminal unless GATEHOUSE_DEBUG is set.
 */
import { DaemonError, oneLine } from '../../daemon/errors.js';
import { defaultServices } from '../../daemon/services/index.js';
import { ControlRequestError } from '../control/client.js';
import { serveDemoModel } from './commands/demo-model.js';
import { buildProgram } from './program.js';

function report(error: unknown): never {
  // A refusal from the gateway's control socket (say, too many unredeemed tickets) is what happened.
  const known = error instanceof DaemonError || error instanceof ControlRequestError;
  process.stderr.write(`gatehouse: ${known ? error.message : `unexpected error: ${oneLine(error)}`}\n`);
  if (process.env['GATEHOUSE_DEBUG'] && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  process.exit(1);
}

try {
  await buildProgram({
    services: (loaded) => defaultServices(loaded),
    runDemoModel: serveDemoModel,
  }).parseAsync(process.argv);
} catch (error) {
  report(error);
}
