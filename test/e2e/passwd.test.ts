import { existsSync, readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import { isOneLineError, requireBuild, runCli, tempHome } from './cli.js';
import { writeConfig } from './gateway-harness.js';

beforeAll(requireBuild);

const ODD = `# my own notes, keep them
limits:   { max_concurrent_turns: 3 }   # flow, odd spacing
dashboard:
    # the hash goes below
    password_hash:   'scrypt$old'    # set by passwd
profiles: [  default ]
listener:
    port: 0            # four-space indent
    host:   "127.0.0.1"
`;

describe('gatehouse passwd (issue 12 item 2)', () => {
  it('keeps config.yaml byte for byte except the hash', async () => {
    const home = tempHome();
    const file = homeLayout(home).configFile;
    writeConfig(home, ODD);
    const run = await runCli(home, ['passwd'], { input: 'a long enough passphrase\n' });
    expect(run.code).toBe(0);
    const text = readFileSync(file, 'utf8');
    const hash = /password_hash: {3}(scrypt\$\S+) {4}# set by passwd/.exec(text)?.[1];
    expect(hash).toBeDefined();
    expect(text).toBe(ODD.replace("'scrypt$old'", hash!));
  });

  it('refuses a short password with the minimum in the message, and writes nothing', async () => {
    const home = tempHome();
    const file = homeLayout(home).configFile;
    writeConfig(home, ODD);
    const short = await runCli(home, ['passwd'], { input: 'elevenchars\n' });
    expect(short.code).not.toBe(0);
    expect(isOneLineError(short.stderr)).toBe(true);
    expect(short.stderr).toContain(
      'the password is too short (11 characters): use at least 12 characters; nothing was changed',
    );
    expect(readFileSync(file, 'utf8')).toBe(ODD);

    const fresh = tempHome();
    const empty = await runCli(fresh, ['passwd'], { input: '\n' });
    expect(empty.stderr).toContain('the password is empty: use at least 12 characters');
    expect(existsSync(homeLayout(fresh).configFile)).toBe(false);

    const help = await runCli(fresh, ['passwd', '--help']);
    expect(help.stdout).toContain('at least 12 characters');
  });
});
