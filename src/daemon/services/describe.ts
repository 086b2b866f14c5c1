/** The `gateway` block of runtime.describe: version, uptime, the default model and chat platforms. */
import { readFileSync } from 'node:fs';
import { packageFile } from '../../runtime/package-files.js';
import type { DaemonContext } from '../daemon.js';
import type { GatewayDescription } from '../../surfaces/rpc/builtins.js';

/** The daemon's turn limit as it stands (limits.max_concurrent_turns). */
interface TurnCounts {
  readonly inUse: number;
  readonly waiting: number;
  readonly capacity: number;
}

let packageVersion: string | undefined;

/** The version in the package's own package.json, at the package root. */
export function gatehouseVersion(): string {
  if (packageVersion === undefined) {
    try {
      const file = packageFile('package.json');
      packageVersion = String((JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version);
    } catch {
      packageVersion = 'unknown';
    }
  }
  return packageVersion;
}

export function describeGateway(
  ctx: Pick<DaemonContext, 'info'>,
  model: { name: string; demo: boolean; provider?: string; turns?: TurnCounts },
): GatewayDescription {
  const startedAt = ctx.info.started_at;
  return {
    version: gatehouseVersion(),
    started_at: startedAt,
    uptime_s: Math.max(0, Math.round((Date.now() - Date.parse(startedAt)) / 1000)),
    // The base URL is not a secret but says nothing a viewer needs; the provider kind is enough.
    model: { name: model.name, provider: model.demo ? 'demo' : 'openai-compatible', demo: model.demo },
    ...(model.provider !== undefined ? { default_provider: model.provider } : {}),
    ...(model.turns
      ? {
          turns: {
            running: model.turns.inUse,
            waiting: model.turns.waiting,
            limit: model.turns.capacity,
          },
        }
      : {}),
    platforms: ctx.info.adapters.map((a) => ({
      platform: a.platform,
      state: a.state,
      detail: a.detail,
      account: a.account ?? null,
    })),
  };
}
