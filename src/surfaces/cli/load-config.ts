/** The home's config as a command reads it: its notices go to stderr unless `quiet`. */
import { loadConfig, type LoadedConfig } from '../../daemon/config.js';
import type { HomeLayout } from '../../daemon/home.js';
import { note } from './shared.js';

export function loadCliConfig(layout: HomeLayout, { quiet = false } = {}): LoadedConfig {
  const loaded = loadConfig(layout.configFile);
  if (!quiet) for (const notice of loaded.notices) note(notice);
  return loaded;
}
