/**
 * Issue 26 items 9 and 10 at start: settings that would be accepted and do nothing stop `gatehouse
 * start` with one line naming the key — several profiles (a gateway serves one) and the legacy
 * token enabled without a token. An old timer key under a platform section is only a note.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { isOneLineError, requireBuild, runCli, tempHome } from './cli.js';
import { writeConfig } from './gateway-harness.js';

beforeAll(requireBuild);

describe('gatehouse start refuses what it would not honour', () => {
  it.each([
    ['profiles: [default, work]\n', 'profiles: lists 2 profiles (default, work), but a gateway serves one'],
    ['legacy_token: {enabled: true}\n', 'legacy_token: enabled is true but no token is set'],
  ])('%s', async (yaml, said) => {
    const home = tempHome();
    writeConfig(home, yaml);
    const run = await runCli(home, ['start', '--port', '0']);
    expect(run.code).not.toBe(0);
    expect(isOneLineError(run.stderr)).toBe(true);
    expect(run.stderr).toContain(said);
    const status = await runCli(home, ['status', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ running: false });
  });
});
