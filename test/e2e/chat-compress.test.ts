/** `/compress` in `gatehouse chat` (issue 11): the real CLI, the daemon it starts, piped lines. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireBuild, runCli, tempHome } from './cli.js';
import { writeConfig } from './gateway-harness.js';

beforeAll(requireBuild);
const homes: string[] = [];
afterEach(async () => {
  await Promise.all(homes.splice(0).map((home) => runCli(home, ['stop'])));
});

describe('gatehouse chat /compress', () => {
  it('compresses the conversation between two messages and says so, in the chat and in --show', async () => {
    const home = tempHome();
    homes.push(home);
    writeConfig(home, 'compression:\n  tail_tokens: 10\n');
    const cwd = mkdtempSync(join(tmpdir(), 'gh-chat-'));
    const run = await runCli(home, ['chat', '--cwd', cwd], {
      input: 'first message\nsecond message\nthird message\nfourth message\n/compress\nfifth message\n',
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    // Announced by the session.compressed event (issue 26 item 3), in the order it happened.
    expect(run.stdout).toContain('(earlier messages summarized: 8 → 5)\n> fifth message');
    expect(run.stdout).toContain('you said: fifth message');
    // /compress itself never reached the agent.
    expect(run.stdout).not.toContain('you said: /compress');

    // The whole history across the compression, and what the model sees now.
    const id = /gatehouse chat --resume (\S+)/.exec(run.stdout)![1]!;
    const full = await runCli(home, ['sessions', '--show', id]);
    expect(full.code).toBe(0);
    for (const n of ['first', 'second', 'third', 'fourth', 'fifth'])
      expect(full.stdout).toContain(`you said: ${n} message`);
    expect(full.stdout.split('you said: fourth message').length).toBe(2); // the copied tail is shown once
    expect(full.stdout).toContain('[Context summary]');
    // The compression is a line of its own, before its summary.
    expect(full.stdout).toMatch(
      /──── compressed at [\d-]+ [\d:]+: earlier messages summarized: 8 → 5 ────\n> \[Context summary\]/,
    );
    const model = await runCli(home, ['sessions', '--show', id, '--model-view']);
    expect(model.code).toBe(0);
    expect(model.stdout).toMatch(/^system> You are an agent running inside Gatehouse/);
    expect(model.stdout).toContain('you said: first message');
    expect(model.stdout).not.toContain('you said: second message');
    expect(model.stdout).toContain('user asked: second message');
    expect(model.stdout).toContain('you said: fifth message');
    // --json prints session.history's result, for scripts.
    const json = await runCli(home, ['sessions', '--show', id, '--model-view', '--json']);
    expect(json.code).toBe(0);
    const shown = JSON.parse(json.stdout) as {
      session_id: string;
      view: string;
      messages: { role: string }[];
    };
    expect(shown).toMatchObject({ session_id: id, view: 'model' });
    expect(shown.messages[0]!.role).toBe('system');
    // The system prompt, the 5 messages the compression left, then the fifth message and its answer.
    expect(shown.messages.length).toBe(8);
  }, 120_000);
});
