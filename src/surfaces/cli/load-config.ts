/**
 * The home's config as a command reads it: its notices go to stderr unless `quiet`, with a warning
 * for each provider whose key variable is not set here (a start says so at once, not at the first
 * message's 401).
 */
import { loadConfig, type LoadedConfig } from '../../daemon/config.js';
import { unsetKeyVariables } from '../../daemon/config-providers.js';
import type { HomeLayout } from '../../daemon/home.js';
import { note } from './shared.js';

export function loadCliConfig(layout: HomeLayout, { quiet = false } = {}): LoadedConfig {
  const loaded = loadConfig(layout.configFile);
  const withKeys = {
    ...loaded,
    notices: [...loaded.notices, ...unsetKeyVariables(loaded.config, process.env)],
  };
  if (!quiet) for (const notice of withKeys.notices) note(notice);
  return withKeys;
}
