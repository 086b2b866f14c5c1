/**
 * The launch fields that shape the frozen prompt (issue 15, SPEC LOC-5), through the real daemon and
 * the demo model, which records every request: project rules (`ignore_rules`), skills and the list of
 * available skills, personal instructions (`ignore_user_config`) and `pass_session_id` — each shown
 * present with the field and absent without it — and the prompt byte-identical on every turn even
 * when the files change after creation. `gatehouse skills` runs exactly as docs/launch.md shows.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RpcCallError, type GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { requireBuild, runCli, tempHome } from './cli.js';
import { BACKENDS, dropTestSchemas, startDaemon, type RunningDaemon } from './gateway-harness.js';
import { chatRequests, createAttached, runTurn, tempDir, type ChatBody } from './seed-fixture.js';

const ROOT_RULE = 'Root rule: run npm test before every commit.';
const SUB_RULE = 'Package rule: this package is written in plain ES modules.';
const PERSONAL = 'Personal: answer in British English.';
const SKILL_BODY = 'Step 1: read the diff. Step 2: list the risks first.';

/** A home with one skill and personal instructions; a repository with rules at two levels. */
function writeHome(home: string): void {
  mkdirSync(join(home, 'skills', 'review'), { recursive: true, mode: 0o700 });
  writeFileSync(
    join(home, 'skills', 'review', 'SKILL.md'),
    `---\nname: review\ndescription: Reviews a change for risks before it is merged\n---\n${SKILL_BODY}\n`,
  );
  mkdirSync(join(home, 'skills', 'broken'), { recursive: true });
  writeFileSync(join(home, 'skills', 'broken', 'SKILL.md'), 'no front matter here\n');
  writeFileSync(join(home, 'AGENTS.md'), `${PERSONAL}\n`);
}

function writeRepository(): { root: string; sub: string } {
  const root = tempDir('gh-repo-');
  mkdirSync(join(root, '.git'));
  writeFileSync(join(root, 'AGENTS.md'), `${ROOT_RULE}\n`);
  const sub = join(root, 'packages', 'web');
  mkdirSync(sub, { recursive: true });
  // CLAUDE.md counts where there is no AGENTS.md.
  writeFileSync(join(sub, 'CLAUDE.md'), `${SUB_RULE}\n`);
  return { root, sub };
}

function systemPrompt(body: ChatBody | undefined): string {
  const first = body?.messages[0];
  expect(first?.role).toBe('system');
  return String(first?.content);
}

let demo: DemoModelServer;
let daemon: RunningDaemon;
let client: GatewayClient;
let repo: { root: string; sub: string };
let turnCount = 0;

/** Creates a session, runs one turn and returns the system prompt the model received. */
async function promptFor(params: Record<string, unknown>): Promise<{ id: string; prompt: string }> {
  const id = await createAttached(client, { cwd: repo.sub, toolsets: [], ...params });
  const before = chatRequests(demo).length;
  const done = await runTurn(client, id, `s-${++turnCount}`, 'hello');
  expect(done.event['outcome']).toBe('completed');
  return { id, prompt: systemPrompt(chatRequests(demo)[before]) };
}

function daemonConfig(): string {
  return [
    'model:',
    `  base_url: ${demo.baseUrl}`,
    '  model: gatehouse-demo',
    'skills:',
    '  offer_available: true',
  ].join('\n');
}

describe.each(BACKENDS)('launch fields in the frozen prompt on %s', (store) => {
  beforeAll(async () => {
    requireBuild();
    demo = await startDemoModel();
    const home = tempHome();
    writeHome(home);
    repo = writeRepository();
    daemon = await startDaemon({ home, config: daemonConfig(), store });
    client = await daemon.connect();
  });

  afterAll(async () => {
    await daemon?.stop();
    await demo?.close();
    await dropTestSchemas();
  });

  describe('project rules (ignore_rules)', () => {
    it('the frozen prompt carries the instruction files from cwd up to the repository root, outermost first', async () => {
      const { prompt } = await promptFor({});
      expect(prompt).toContain('## Project rules');
      expect(prompt).toContain(`### ${join(repo.root, 'AGENTS.md')}\n\n${ROOT_RULE}`);
      expect(prompt).toContain(`### ${join(repo.sub, 'CLAUDE.md')}\n\n${SUB_RULE}`);
      expect(prompt.indexOf(ROOT_RULE)).toBeLessThan(prompt.indexOf(SUB_RULE));
    });

    it('ignore_rules: true leaves them out', async () => {
      const { prompt } = await promptFor({ ignore_rules: true });
      expect(prompt).not.toContain('## Project rules');
      expect(prompt).not.toContain(ROOT_RULE);
      expect(prompt).not.toContain(SUB_RULE);
      // Only the project's rules: the owner's own instructions stay.
      expect(prompt).toContain(PERSONAL);
    });

    it('a rules file over the cap is cut with a visible note', async () => {
      const big = tempDir('gh-big-');
      mkdirSync(join(big, '.git'));
      writeFileSync(join(big, 'AGENTS.md'), 'x'.repeat(40_000));
      const { prompt } = await promptFor({ cwd: big });
      expect(prompt).toContain(
        `[truncated: the first 32768 of 40000 bytes of ${join(big, 'AGENTS.md')} are shown]`,
      );
    });
  });

  describe('skills, the available-skills list and personal instructions (ignore_user_config)', () => {
    it('a named skill is rendered into the frozen prompt without its front matter', async () => {
      const { prompt } = await promptFor({ skills: ['review'] });
      expect(prompt).toContain(`## Skill: review\n\n${SKILL_BODY}`);
      expect(prompt).not.toContain('description: Reviews');
    });

    it('without skills no skill body is rendered; the available skills are listed by name and description', async () => {
      const { prompt } = await promptFor({});
      expect(prompt).not.toContain('## Skill: review');
      expect(prompt).not.toContain(SKILL_BODY);
      expect(prompt).toContain('## Available skills');
      expect(prompt).toContain(
        `- review: Reviews a change for risks before it is merged (${join(daemon.home, 'skills', 'review', 'SKILL.md')})`,
      );
      // A folder that is not a valid skill is not offered.
      expect(prompt).not.toContain('- broken');
      expect(prompt).toContain(`## Personal instructions\n\n${PERSONAL}`);
    });

    it('ignore_user_config leaves out the personal instructions and the skills; the project rules stay', async () => {
      const { prompt } = await promptFor({ ignore_user_config: true });
      expect(prompt).not.toContain(PERSONAL);
      expect(prompt).not.toContain('## Available skills');
      expect(prompt).toContain(ROOT_RULE);
    });

    it('safe_mode implies it: no personal instructions, no skills list; naming a skill is refused', async () => {
      const { prompt } = await promptFor({ safe_mode: true });
      expect(prompt).not.toContain(PERSONAL);
      expect(prompt).not.toContain('## Available skills');
      expect(prompt).toContain(ROOT_RULE);
      for (const flag of [{ safe_mode: true }, { ignore_user_config: true }]) {
        const error = await client
          .call('session.create', { cwd: repo.sub, skills: ['review'], ...flag })
          .catch((e: unknown) => e);
        expect(error).toMatchObject({ reason: 'invalid_params', details: { field: 'skills' } });
      }
    });

    it('an unknown skill is invalid_params naming skills, and creates nothing', async () => {
      const listed = await client.call<{ sessions: unknown[] }>('session.list', {
        scope: 'stored',
        limit: 100,
      });
      const error = await client
        .call('session.create', { cwd: repo.sub, skills: ['nope'] })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RpcCallError);
      expect((error as RpcCallError).reason).toBe('invalid_params');
      expect((error as RpcCallError).message).toContain('unknown skill "nope"');
      const after = await client.call<{ sessions: unknown[] }>('session.list', {
        scope: 'stored',
        limit: 100,
      });
      expect(after.sessions.length).toBe(listed.sessions.length);
    });
  });

  describe('pass_session_id', () => {
    it('the frozen prompt tells the agent its logical session id', async () => {
      const { id, prompt } = await promptFor({ pass_session_id: true });
      expect(prompt).toContain(`Session id: ${id}`);
    });

    it('without it the id is not in the prompt', async () => {
      const { id, prompt } = await promptFor({});
      expect(prompt).not.toContain('Session id:');
      expect(prompt).not.toContain(id);
    });
  });

  describe('the frozen prompt', () => {
    it('is byte-identical on every turn and after a restart, though the files it was rendered from change', async () => {
      const { id, prompt } = await promptFor({ skills: ['review'], pass_session_id: true });
      writeFileSync(join(repo.root, 'AGENTS.md'), 'Changed after creation.\n');
      writeFileSync(join(daemon.home, 'AGENTS.md'), 'Also changed.\n');
      const before = chatRequests(demo).length;
      await runTurn(client, id, `s-${++turnCount}`, 'again');
      const second = systemPrompt(chatRequests(demo)[before]);
      expect(second).toBe(prompt);
      // A cold daemon renders nothing again: the prompt comes from the receipt.
      await daemon.stop();
      daemon = await startDaemon({ home: daemon.home, config: daemonConfig(), store });
      client = await daemon.connect();
      await client.call('session.resume', { session_id: id });
      const after = chatRequests(demo).length;
      await runTurn(client, id, `s-${++turnCount}`, 'after the restart');
      expect(systemPrompt(chatRequests(demo)[after])).toBe(prompt);
      writeFileSync(join(repo.root, 'AGENTS.md'), `${ROOT_RULE}\n`);
      writeFileSync(join(daemon.home, 'AGENTS.md'), `${PERSONAL}\n`);
    });
  });
});

// `gatehouse skills` reads the home's skills folder and opens no store: one run is enough.
describe('gatehouse skills', () => {
  let home: string;
  beforeAll(() => {
    home = tempHome();
    writeHome(home);
  });

  it('lists name, description and path, and names a folder that is not a skill', async () => {
    const run = await runCli(home, ['skills']);
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+DESCRIPTION\s+PATH$/);
    expect(lines[1]).toMatch(
      new RegExp(
        `^review\\s+Reviews a change for risks before it is merged\\s+${join(home, 'skills', 'review', 'SKILL.md')}$`,
      ),
    );
    expect(lines).toHaveLength(2);
    expect(run.stderr).toContain(`${join(home, 'skills', 'broken', 'SKILL.md')} is not a skill`);
  });

  it('--json prints the same as JSON', async () => {
    const run = await runCli(home, ['skills', '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([
      {
        name: 'review',
        description: 'Reviews a change for risks before it is merged',
        path: join(home, 'skills', 'review', 'SKILL.md'),
      },
    ]);
  });

  it('an empty home says where skills go', async () => {
    const run = await runCli(tempHome(), ['skills']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^no skills in .*\/skills: add .*\/skills\/<name>\/SKILL\.md/);
  });
});
