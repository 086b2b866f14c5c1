/**
 * The chat's own commands as a user types them (docs/chat.md "Commands"): the real built CLI over
 * pipes, the real daemon it starts in a temp home, the built-in demo model.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild, runCli, tempHome } from './cli.js';

beforeAll(requireBuild);
const E2E_TIMEOUT_MS = 120_000;

const homes: string[] = [];
afterEach(async () => {
  await Promise.all(homes.splice(0).map((home) => runCli(home, ['stop'])));
});

async function transcript(home: string, id: string): Promise<(string | null)[]> {
  const layout = homeLayout(home);
  const { url } = JSON.parse(readFileSync(layout.gatewayJson, 'utf8')) as { url: string };
  const client = await GatewayClient.connectLocal(url, layout.controlSocket, 'interactive');
  try {
    const snap = await client.call<{ messages: { content: string | null }[] }>('session.resume', {
      session_id: id,
    });
    return snap.messages.map((m) => m.content);
  } finally {
    await client.close();
  }
}

describe('gatehouse chat commands: /help, /undo, /retry, /new, /reset', () => {
  it(
    'lists its commands, undoes and retries through the store, resets to an empty history, and sends unknown /words to the agent',
    async () => {
      const home = tempHome();
      homes.push(home);
      // As docs/chat.md shows it: printf 'first\nsecond\n/undo\n/retry\n/help\n/new\nafter the reset\n/unknown words\n' | gatehouse chat
      const run = await runCli(home, ['chat'], {
        input: 'first\nsecond\n/undo\n/retry\n/help\n/new\nafter the reset\n/unknown words\n',
      });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      const out = run.stdout;
      expect(out).toContain('(undid 1 turn)');
      expect(out).toContain('(undid 1 turn)\n(undid 1 turn)\n> first\n');
      expect(out.split('you said: first').length).toBe(3); // answered, undone… then retried: once more
      for (const name of ['/help', '/new', '/reset', '/undo', '/retry'])
        expect(out).toMatch(new RegExp(`^  ${name} `, 'm'));
      expect(out).toContain('Any other line, including other /words, is sent to the agent.');
      expect(out).toContain('(new conversation: the history is cleared; queued messages stay)');
      expect(out).toContain('you said: /unknown words');
      const id = /session (\d{8}_\d{6}_[0-9a-f]{8})/.exec(out)![1]!;

      // The session behind the same id starts empty after /new; /undo and /retry left no trace in it.
      const after = await transcript(home, id);
      expect(after).toEqual([
        'after the reset',
        'Demo model (scripted stand-in): you said: after the reset',
        '/unknown words',
        'Demo model (scripted stand-in): you said: /unknown words',
      ]);

      // /reset is the same as /new; a resumed chat shows only the new history.
      const again = await runCli(home, ['chat', '--resume', id], { input: '/reset\n' });
      expect(again.code).toBe(0);
      expect(again.stdout).toContain('(new conversation: the history is cleared; queued messages stay)');
      expect(await transcript(home, id)).toEqual([]);
      const resumed = await runCli(home, ['chat', '--resume', id], { input: '/undo\n' });
      expect(resumed.stdout).toContain('(nothing to undo)');
      expect(resumed.stdout).not.toContain('after the reset');
    },
    E2E_TIMEOUT_MS,
  );
});

describe('gatehouse chat: /fork', () => {
  it(
    'branches the conversation into new sessions, whole or without the last n messages, and leaves it as it was',
    async () => {
      const home = tempHome();
      homes.push(home);
      // As docs/chat.md shows it: printf 'one\ntwo\nthree\n/fork 1\n/fork\n' | gatehouse chat
      const run = await runCli(home, ['chat'], { input: 'one\ntwo\nthree\n/fork 1\n/fork\n' });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      const id = /session (\d{8}_\d{6}_[0-9a-f]{8})/.exec(run.stdout)![1]!;
      const forks = [
        ...run.stdout.matchAll(
          /\(forked into (\S+) "([^"]+)"; go on there with: gatehouse chat --resume (\S+)\)/g,
        ),
      ];
      expect(forks).toHaveLength(2);
      const [without, whole] = forks.map((m) => m[1]!);
      expect(forks.map((m) => m[3])).toEqual([without, whole]);
      const said = (t: string) => `Demo model (scripted stand-in): you said: ${t}`;
      expect(await transcript(home, without!)).toEqual(['one', said('one'), 'two', said('two')]);
      const all = ['one', said('one'), 'two', said('two'), 'three', said('three')];
      expect(await transcript(home, whole!)).toEqual(all);
      expect(await transcript(home, id)).toEqual(all);
      // The line it prints is the way in.
      const resumed = await runCli(home, ['chat', '--resume', without!], { input: 'four\n' });
      expect(resumed.code).toBe(0);
      expect(await transcript(home, without!)).toEqual([
        'one',
        said('one'),
        'two',
        said('two'),
        'four',
        said('four'),
      ]);
    },
    E2E_TIMEOUT_MS,
  );
});
