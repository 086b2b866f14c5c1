/**
 * docs/identity.md run as written (issue 30): its config block starts the daemon, and each of its
 * commands runs exactly as shown (`<session>` replaced by a real session id): a member ticket,
 * sharing, listing and revoking a share, and the audit trail of it all.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { runCli } from './cli.js';
import { BACKENDS } from './gateway-harness.js';
import { createAttached, runTurn, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();
const doc = readFileSync(new URL('../../docs/identity.md', import.meta.url), 'utf8');

function blocks(lang: string): string[] {
  return [...doc.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);
}

/** The documented commands, in order, each as argv after `gatehouse`. */
const commands = blocks('sh')
  .flatMap((block) => block.trim().split('\n'))
  .map((line) =>
    line
      .trim()
      .split(/\s+/)
      .map((word) => word.replace(/^'(.*)'$/, '$1')),
  );

describe.each(BACKENDS)('docs/identity.md as written on %s', (store) => {
  it('runs every documented command against a member session', { timeout: 120_000 }, async () => {
    fx.store = store;
    expect(commands.every((argv) => argv[0] === 'gatehouse')).toBe(true);
    expect(commands.map((argv) => argv[1])).toEqual([
      'ticket',
      'share',
      'shares',
      'unshare',
      'audit',
      'share',
    ]);
    const [config] = blocks('yaml');
    const d = await fx.daemon({ extraConfig: config! });
    const run = async (argv: string[], sessionId?: string) => {
      const args = argv.slice(1).map((a) => (a === '<session>' ? sessionId! : a));
      const result = await runCli(d.home, args);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      return result.stdout;
    };

    const ticket = (await run(commands[0]!)).trim();
    const alice = await GatewayClient.connect(d.url, ticket);
    const described = await alice.call<{ principal: { subject: string } }>('runtime.describe');
    expect(described.principal.subject).toBe('member:alice');
    // The documented limits hold: no yolo for members.
    await expect(alice.call('session.create', { cwd: tempDir(), yolo: true })).rejects.toMatchObject({
      reason: 'member_limit',
    });
    const owner = await d.connect();
    const sessionId = await createAttached(owner, { cwd: tempDir() });

    expect(await run(commands[1]!, sessionId)).toBe(`Shared ${sessionId} with member:alice (submit).\n`);
    expect(await run(commands[2]!, sessionId)).toBe('member:alice  submit  (granted by native:owner)\n');
    await alice.call('session.resume', { session_id: sessionId });
    await runTurn(alice, sessionId, 'a1', 'hello from alice');
    const revoked = alice.next((n) => n.method === 'session.access_revoked');
    expect(await run(commands[3]!, sessionId)).toBe(
      `Revoked member:alice's access to ${sessionId} (1 live viewer(s) detached).\n`,
    );
    await revoked;
    await expect(alice.call('session.info', { session_id: sessionId })).rejects.toMatchObject({
      reason: 'not_found',
    });

    const lines = (await run(commands[4]!, sessionId)).trim().split('\n');
    expect(lines.map((l) => l.split('  ').slice(1, 6))).toEqual([
      ['native:owner', 'native', 'created', sessionId, 'ok'],
      ['native:owner', 'native', 'shared', sessionId, 'ok'],
      ['member:alice', 'native', 'submitted', sessionId, 'ok'],
      ['native:owner', 'native', 'unshared', sessionId, 'ok'],
    ]);
    expect(lines[1]).toContain('{"member":"member:alice","level":"submit"}');
    expect(lines.join('\n')).not.toContain('hello from alice');
    // The other options the page names: --principal, --limit (the newest N), --json (newest first).
    const alices = (await run(['gatehouse', 'audit', '--principal', 'member:alice'])).trim().split('\n');
    expect(alices.map((l) => l.split('  ').slice(1, 6))).toEqual([
      ['member:alice', 'native', 'created', '-', 'member_limit'],
      ['member:alice', 'native', 'submitted', sessionId, 'ok'],
    ]);
    const newest = (await run(['gatehouse', 'audit', '--limit', '2'])).trim().split('\n');
    expect(newest.map((l) => l.split('  ')[3])).toEqual(['submitted', 'unshared']);
    const json = JSON.parse(await run(['gatehouse', 'audit', '--json', '--limit', '2'])) as {
      rows: { action: string; principal: string }[];
    };
    expect(json.rows.map((r) => r.action)).toEqual(['unshared', 'submitted']);
    const refused = await runCli(d.home, ['audit', '--limit', '0']);
    expect([refused.code, refused.stderr.trim()]).toEqual([
      1,
      expect.stringContaining('--limit must be a whole number from 1 to 500'),
    ]);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    // Sharing with a person who signs in through the identity provider, by their principal.
    const oidcMember = commands[5]![3]!;
    expect(oidcMember).toMatch(/^oidc:https:\/\/.+#\d+$/);
    expect(await run(commands[5]!, sessionId)).toBe(`Shared ${sessionId} with ${oidcMember} (read).\n`);
    await Promise.all([alice.close(), owner.close()]);
  });
});
