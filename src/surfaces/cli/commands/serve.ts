import { releaseOptimisingTiers } from '../../../daemon/allocator.js';
import { withListenerFlags } from '../../../daemon/config-listener.js';
import { configSecrets, maskConfig } from '../../../daemon/config-secrets.js';
import { runDaemon } from '../../../daemon/daemon.js';
import { sealEnvironment } from '../../../daemon/seal-environment.js';
import { raiseFileLimit } from '../../../daemon/file-limit.js';
import { oneLine } from '../../../daemon/errors.js';
import { initHome, type HomeLayout } from '../../../daemon/home.js';
import { createLogger, flushRepeatedLines, type Logger } from '../../../daemon/logger.js';
import { readPid, removeQuietly } from '../../../daemon/pidfile.js';
import { cliHome, defaultPortTaken, note, say, type CliDeps } from '../shared.js';
import { loadCliConfig } from '../load-config.js';

/** `gatehouse serve`: runs the gateway in the foreground until a signal drains and stops it. */
export async function serve(
  options: { logStderr?: boolean; port?: string; host?: string },
  deps: CliDeps,
): Promise<void> {
  const layout = cliHome();
  initHome(layout);
  const loaded = withListenerFlags(loadCliConfig(layout), options);
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
  // Before anything is spawned: tools must not read the secrets in the daemon's environment.
  const { env, outcome } = sealEnvironment();
  if (!outcome.sealed)
    logger.warn(
      { reason: outcome.reason },
      "could not clear the daemon's initial environment: tools may read it through /proc (docs/tool-reach.md)",
    );
  const files = raiseFileLimit();
  if (files.raised) logger.info({ from: files.from, to: files.to }, 'open-file limit raised');
  else logger.info({ soft: files.soft, reason: files.reason }, 'open-file limit kept');
  const handle = await runDaemon({
    layout,
    config: loaded.config,
    configFile: loaded.file,
    logger,
    services: await deps.services(loaded, env),
    handleSignals: true,
  });
  const fellBack = defaultPortTaken(loaded.config.listener.port, handle.info.url);
  if (fellBack) note(fellBack);
  say(
    `Gatehouse is ready at ${handle.info.url ?? '(no listener)'} (pid ${process.pid}, home ${layout.root}).`,
  );
  say(`Model: ${handle.info.model}. Press Ctrl-C to stop.`);
  // Started: what runs from now on (turns) is worth V8's optimising compilers again.
  releaseOptimisingTiers();
  const code = await handle.done;
  flushRepeatedLines(logger);
  process.exit(code);
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
