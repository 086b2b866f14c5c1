import { stringify } from 'yaml';
import { maskConfig } from '../../../daemon/config-secrets.js';
import { cliHome, say } from '../shared.js';
import { loadCliConfig } from '../load-config.js';

/** `gatehouse config`: the effective configuration, defaults filled in and secrets masked. */
export function showConfig(options: { json?: boolean }): void {
  const loaded = loadCliConfig(cliHome());
  const masked = maskConfig(loaded.config);
  if (options.json) {
    say(JSON.stringify(masked, null, 2));
    return;
  }
  say(`# effective configuration from ${loaded.file} (defaults filled in, secrets masked)`);
  process.stdout.write(stringify(masked));
}
