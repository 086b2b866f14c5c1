import type { Command } from 'commander';
import { configSecrets, maskConfig } from '../../../daemon/config.js';
import { runDaemon } from '../../../daemon/daemon.js';
import { oneLine } from '../../../daemon/errors.js';
import { initHome, type HomeLayout } from '../../../daemon/home.js';
import { createLogger, flushRepeatedLines, type Logger } from '../../../daemon/logger.js';
import { readPid, removeQuietly } from '../../../daemon/pidfile.js';
import { cliHome, loadCliConfig, say, type CliDeps } from '../shared.js';

export function registerServe(program: Command, deps: CliDeps): void {
  program
    .command('serve')
    .description('run the gateway in the foreground (Ctrl-C or SIGTERM drains and stops it)')
    .option('--log-stderr', 'also write log lines to stderr')
    .action(async (options: { logStderr?: boolean }) => {
      const layout = cliHome();
      initHome(layout);
      const loaded = loadCliConfig(layout);
      const logger = createLogger({
        file: layout.logFile,
        stderr: options.logStderr === true,
        secrets: configSecrets(loaded.config),
        rotation: {
          maxBytes: Math.round(loaded.config.logging.max_size_mb * 1024 * 1024),
          keep: loaded.config.logging.keep_files,
        },
      });
      for (const notice of loaded.notices) logger.warn(notice);
      logger.info({ config: maskConfig(loaded.config), file: loaded.file }, 'gateway starting');
      installCrashHandlers(logger, layout);
      const handle = await runDaemon({
        layout,
        config: loaded.config,
        configFile: loaded.file,
        logger,
        services: deps.services(loaded),
        handleSignals: true,
      });
      say(
        `Gatehouse is ready at ${handle.info.url ?? '(no listener)'} (pid ${process.pid}, home ${layout.root}).`,
      );
      say(`Model: ${handle.info.model}. Press Ctrl-C to stop.`);
      const code = await handle.done;
      flushRepeatedLines(logger);
      process.exit(code);
    });
}

/**
 * An unexpected error anywhere in the daemon is logged with its details, the run files are
 * removed so `status` does not report a dead daemon, and the terminal gets one line.
 */
function installCrashHandlers(logger: Logger, layout: HomeLayout): void {
  const crash = (error: unknown) => {
    flushRepeatedLines(logger);
    logger.fatal({ err: error }, 'gateway crashed');
    if (readPid(layout.pidFile) === process.pid) {
      removeQuietly(layout.gatewayJson);
      removeQuietly(layout.pidFile);
    }
    process.stderr.write(
      `gatehouse: the gateway stopped after an unexpected error (${oneLine(error)}); details are in ${layout.logFile}\n`,
    );
    process.exit(70);
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
}
