#!/usr/bin/env node
/**
 * The `gatehouse` command. Every failure ends here as one line on stderr and a non-zero exit
 * (SPEC UX-3); the stack goes nowhere near the terminal unless GATEHOUSE_DEBUG is set.
 */
import { DaemonError, oneLine } from '../../daemon/errors.js';
import { defaultServices } from '../../daemon/services/index.js';
import { serveDemoModel } from './commands/demo-model.js';
import { buildProgram } from './program.js';

function report(error: unknown): never {
  const known = error instanceof DaemonError;
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
