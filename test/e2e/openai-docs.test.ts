/**
 * docs/integrations.md, "An OpenAI-compatible endpoint": its config, its curl command and its Node
 * example are taken from the page and run as written against the real daemon, and print what the
 * page says they print. The Node example runs the official `openai` client.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finished, requireBuild } from './cli.js';
import { dropTestSchemas, startDaemon, type RunningDaemon } from './gateway-harness.js';

const ROOT = resolve(import.meta.dirname, '../..');
const PAGE = readFileSync(resolve(ROOT, 'docs/integrations.md'), 'utf8');

/** The fenced block right after `<!-- kind: name -->` on the page. */
function block(kind: 'example' | 'output', name: string): string {
  const match = new RegExp(`<!-- ${kind}: ${name} -->\\n\`\`\`[a-z]*\\n([\\s\\S]*?)\`\`\``).exec(PAGE);
  if (!match) throw new Error(`docs/integrations.md has no ${kind} block ${name}`);
  return match[1]!;
}

const KEY = 'sk-gatehouse-docs-0123456789';
let daemon: RunningDaemon;

beforeAll(async () => {
  requireBuild();
  daemon = await startDaemon({
    config: block('example', 'openai-config'),
    env: { GATEHOUSE_API_KEY_LAPTOP: KEY },
  });
}, 60_000);
afterAll(async () => {
  await daemon?.stop();
  await dropTestSchemas();
});

function run(command: string, args: string[], input: string) {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, GATEHOUSE_URL: daemon.url, GATEHOUSE_API_KEY_LAPTOP: KEY },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin.end(input);
  return finished(child);
}

describe('docs/integrations.md: the OpenAI-compatible endpoint', () => {
  it('the curl command prints the answer shown', { timeout: 60_000 }, async () => {
    const result = await run('bash', ['-euo', 'pipefail'], block('example', 'openai-curl'));
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(block('output', 'openai-curl'));
  });

  it(
    'the openai client example streams the answer shown, the tool call on stderr',
    { timeout: 60_000 },
    async () => {
      const result = await run(process.execPath, ['--input-type=module'], block('example', 'openai-node'));
      expect(result.stdout).toBe(block('output', 'openai-node'));
      expect(result.stderr).toBe('[tool: terminal]\n');
    },
  );
});
