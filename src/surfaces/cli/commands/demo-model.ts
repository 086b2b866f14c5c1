import { DaemonError } from '../../../daemon/errors.js';
import { runDemoModelCommand } from '../../../runtime/demo/server.js';
import { say, type CliDeps } from '../shared.js';

/** `gatehouse demo-model`: checks the flags, then serves the demo model alone (deps.runDemoModel). */
export async function demoModel(options: { port: string; latencyMs: string }, deps: CliDeps): Promise<void> {
  const port = Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new DaemonError('invalid_input', `--port must be a number from 0 to 65535, not "${options.port}"`);
  }
  const latencyMs = Number(options.latencyMs);
  if (!Number.isInteger(latencyMs) || latencyMs < 0 || latencyMs > 60_000) {
    throw new DaemonError(
      'invalid_input',
      `--latency-ms must be a whole number of milliseconds from 0 to 60000, not "${options.latencyMs}"`,
    );
  }
  if (!deps.runDemoModel) {
    throw new DaemonError('not_available', 'the standalone demo model is not part of this build yet');
  }
  await deps.runDemoModel({ port, latencyMs });
}

/**
 * The real `demo-model` command: serves on 127.0.0.1 until SIGINT or SIGTERM, then closes the port
 * and returns (exit code 0). The server prints its base_url and says it is a scripted stand-in.
 */
export async function serveDemoModel(options: { port: number; latencyMs: number }): Promise<void> {
  const server = await runDemoModelCommand({ port: options.port, latencyMs: options.latencyMs }).catch(
    (error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        throw new DaemonError(
          'invalid_input',
          `port ${options.port} is already in use: choose another --port`,
        );
      }
      throw error;
    },
  );
  say('Press Ctrl-C to stop.');
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await server.close();
}
