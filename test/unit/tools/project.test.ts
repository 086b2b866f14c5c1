import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PromptBroker } from '../../../src/runtime/approvals/broker.js';
import { listDirectoryTool, readFileTool, writeFileTool } from '../../../src/runtime/tools/project.js';
import { harness, tempDir } from './harness.js';

function setup(yolo = false) {
  const outside = tempDir('gh-outside-');
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'outside content');
  const cwd = tempDir();
  fs.mkdirSync(path.join(cwd, 'src'));
  fs.writeFileSync(path.join(cwd, 'src', 'main.ts'), 'console.log(1);\n');
  fs.symlinkSync(outside, path.join(cwd, 'escape'));
  const broker = new PromptBroker();
  return { cwd, outside, broker, ...harness(broker, { cwd, sessionId: 'ses_p', yolo }) };
}

describe('LOC-6 project toolset confined to the cwd', () => {
  it('reads and lists inside the cwd', async () => {
    const { context } = setup();
    expect(await readFileTool.run({ path: 'src/main.ts' }, context)).toEqual({
      content: 'console.log(1);\n',
    });
    expect((await listDirectoryTool.run({}, context)).content).toBe('escape@\nsrc/');
    expect((await listDirectoryTool.run({ path: 'src' }, context)).content).toBe('main.ts');
    const missing = await readFileTool.run({ path: 'nope.txt' }, context);
    expect(missing).toEqual({ content: 'Cannot read nope.txt: no such file or directory.', isError: true });
  });

  it('refuses paths that escape the cwd by .., absolute path or symlink', async () => {
    const { context, outside } = setup(true);
    for (const escaping of [
      '../x',
      '/etc/passwd',
      path.join(outside, 'secret.txt'),
      'escape/secret.txt',
      'src/../../x',
    ]) {
      const read = await readFileTool.run({ path: escaping }, context);
      expect(read.isError).toBe(true);
      expect(read.content).toMatch(/^Refused: /);
      expect((await listDirectoryTool.run({ path: escaping }, context)).isError).toBe(true);
      expect((await writeFileTool.run({ path: escaping, content: 'x' }, context)).content).toMatch(
        /^Refused: /,
      );
    }
    expect((await writeFileTool.run({ path: 'escape/new.txt', content: 'x' }, context)).isError).toBe(true);
    expect(fs.existsSync(path.join(outside, 'new.txt'))).toBe(false);
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('outside content');
  });

  it('asks for an edit approval (once | deny) before writing', async () => {
    const { cwd, broker, context } = setup();
    const opened = broker.events.next('prompt:opened');
    const writing = writeFileTool.run({ path: 'docs/notes.md', content: 'hello' }, context);
    const { prompt } = await opened;
    expect(prompt).toMatchObject({
      kind: 'edit',
      choices: ['once', 'deny'],
      command: 'write_file docs/notes.md (5 bytes)',
    });
    const answer = { session_id: 'ses_p', execution_generation: 1, prompt_id: prompt.prompt_id };
    expect(broker.respondApproval({ ...answer, choice: 'always' })).toEqual({ status: 'invalid_choice' });
    expect(fs.existsSync(path.join(cwd, 'docs'))).toBe(false);
    expect(broker.respondApproval({ ...answer, choice: 'once' })).toEqual({ status: 'resolved' });
    expect(await writing).toEqual({ content: 'Wrote 5 bytes to docs/notes.md.' });
    expect(fs.readFileSync(path.join(cwd, 'docs', 'notes.md'), 'utf8')).toBe('hello');
  });

  it('does not write when the edit is denied', async () => {
    const { cwd, broker, context } = setup();
    const opened = broker.events.next('prompt:opened');
    const writing = writeFileTool.run({ path: 'src/main.ts', content: 'changed' }, context);
    const { prompt } = await opened;
    broker.respondApproval({
      session_id: 'ses_p',
      execution_generation: 1,
      prompt_id: prompt.prompt_id,
      choice: 'deny',
    });
    expect((await writing).content).toContain('denied');
    expect(fs.readFileSync(path.join(cwd, 'src', 'main.ts'), 'utf8')).toBe('console.log(1);\n');
  });
});
