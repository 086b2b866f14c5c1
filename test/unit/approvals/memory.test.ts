/**
 * Remember exactly what was approved (issue 25, item 3) and the approval modes (item 6): through the
 * real broker and the real terminal tool, with real commands in temp directories.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileAlwaysAllowStore } from '../../../src/runtime/approvals/always-store.js';
import { PromptBroker, type PendingPrompt } from '../../../src/runtime/approvals/broker.js';
import { decideApproval, type ApprovalMode } from '../../../src/runtime/approvals/decide.js';
import { terminalTool } from '../../../src/runtime/tools/terminal.js';
import { harness, tempDir } from '../tools/harness.js';

/** Runs `command` in `cwd`; answers its prompt with `answer` if one opens. Returns the prompt. */
async function run(
  broker: PromptBroker,
  command: string,
  options: { cwd: string; sessionId?: string; answer?: string; yolo?: boolean },
): Promise<{ prompt: PendingPrompt | null; content: string }> {
  const { context } = harness(broker, {
    cwd: options.cwd,
    sessionId: options.sessionId ?? 'ses_a',
    yolo: options.yolo ?? false,
  });
  let prompt: PendingPrompt | null = null;
  const off = broker.events.on((event) => {
    if (event.type !== 'prompt:opened') return;
    prompt = event.prompt;
    broker.respondApproval({
      session_id: event.prompt.session_id,
      execution_generation: 1,
      prompt_id: event.prompt.prompt_id,
      choice: options.answer ?? 'deny',
    });
  });
  const result = await terminalTool.run({ command }, context);
  off();
  return { prompt, content: result.content };
}

function b64Python(code: string): string {
  return `python3 -c 'import base64;exec(base64.b64decode("${Buffer.from(code).toString('base64')}"))'`;
}

describe('an approval is bound to the exact command and cwd', () => {
  it('a `session` answer to one base64 python does not approve another; the prompt shows the payload', async () => {
    const cwd = tempDir();
    const broker = new PromptBroker();
    const benign = b64Python('print("hello from a harmless program")');
    const first = await run(broker, benign, { cwd, answer: 'session' });
    expect(first.content).toContain('hello from a harmless program');
    const shown = first.prompt?.type === 'approval.request' ? first.prompt : null;
    expect(shown?.command).toBe(benign);
    expect(shown?.scope).toBe(
      `"session" approves this exact command in ${cwd}, for this session; "always" approves this exact command in ${cwd}, from now on`,
    );

    fs.mkdirSync(path.join(cwd, 'victim'));
    const evil = b64Python(`import shutil; shutil.rmtree(${JSON.stringify(path.join(cwd, 'victim'))})`);
    const second = await run(broker, evil, { cwd, answer: 'deny' });
    expect(second.prompt?.type === 'approval.request' && second.prompt.command).toBe(evil);
    expect(second.content).toContain('The user denied this command');
    expect(fs.existsSync(path.join(cwd, 'victim'))).toBe(true);

    expect((await run(broker, benign, { cwd })).prompt).toBeNull();
  });

  it('a `session` answer to `sudo true` does not approve `sudo rm`', async () => {
    const cwd = tempDir();
    const broker = new PromptBroker();
    expect((await run(broker, 'sudo -n true', { cwd, answer: 'session' })).prompt).not.toBeNull();
    expect((await run(broker, 'sudo -n true', { cwd })).prompt).toBeNull();
    fs.mkdirSync(path.join(cwd, 'victim'));
    const rm = await run(broker, `sudo -n rm -rf ${path.join(cwd, 'victim')}`, { cwd, answer: 'deny' });
    expect(rm.prompt).not.toBeNull();
    expect(fs.existsSync(path.join(cwd, 'victim'))).toBe(true);
  });

  it('an `always` for `rm -rf sub` in cwd A approves neither `rm -rf /elsewhere` nor the same command in cwd B', async () => {
    const file = path.join(tempDir(), 'always-allow.json');
    const broker = new PromptBroker({ alwaysAllow: new FileAlwaysAllowStore(file) });
    const a = tempDir();
    const b = tempDir();
    const elsewhere = tempDir();
    for (const dir of [a, b]) fs.mkdirSync(path.join(dir, 'sub'));
    await run(broker, 'rm -rf sub', { cwd: a, answer: 'always' });
    expect(fs.existsSync(path.join(a, 'sub'))).toBe(false);

    const restarted = new PromptBroker({ alwaysAllow: new FileAlwaysAllowStore(file) });
    fs.mkdirSync(path.join(a, 'sub'));
    expect((await run(restarted, 'rm -rf sub', { cwd: a, sessionId: 'ses_new' })).prompt).toBeNull();
    expect(fs.existsSync(path.join(a, 'sub'))).toBe(false);

    const other = await run(restarted, `rm -rf ${elsewhere}`, { cwd: a, sessionId: 'ses_new' });
    expect(other.prompt).not.toBeNull();
    expect(fs.existsSync(elsewhere)).toBe(true);
    const inB = await run(restarted, 'rm -rf sub', { cwd: b, sessionId: 'ses_new' });
    expect(inB.prompt).not.toBeNull();
    expect(fs.existsSync(path.join(b, 'sub'))).toBe(true);
  });

  it('a version 1 approvals file is not honoured', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'always-allow.json');
    fs.writeFileSync(file, JSON.stringify({ version: 1, always: ['recursive-delete:rm'] }));
    const broker = new PromptBroker({ alwaysAllow: new FileAlwaysAllowStore(file) });
    fs.mkdirSync(path.join(dir, 'sub'));
    expect((await run(broker, 'rm -rf sub', { cwd: dir })).prompt).not.toBeNull();
    expect(fs.existsSync(path.join(dir, 'sub'))).toBe(true);
    expect(broker.listRemembered()).toEqual([]);
  });

  it('lists and revokes remembered rules, session and always alike', async () => {
    const file = path.join(tempDir(), 'always-allow.json');
    const broker = new PromptBroker({ alwaysAllow: new FileAlwaysAllowStore(file) });
    const cwd = tempDir();
    await run(broker, 'touch one', { cwd, answer: 'session' });
    await run(broker, 'touch two', { cwd, answer: 'always' });
    const rules = broker.listRemembered();
    expect(rules.map((r) => [r.scope, r.shown, r.cwd])).toEqual([
      ['session', 'touch one', cwd],
      ['session', 'touch two', cwd],
      ['always', 'touch two', cwd],
    ]);
    const always = rules[2];
    expect(always?.session_id).toBeNull();
    expect(broker.revokeRemembered(always?.id ?? '')).toBe(true);
    expect(broker.revokeRemembered(always?.id ?? '')).toBe(false);
    expect(broker.listRemembered().map((r) => r.shown)).toEqual(['touch one']);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ version: 2, rules: [] });
    expect((await run(broker, 'touch two', { cwd, answer: 'deny' })).prompt).not.toBeNull();
  });
});

describe('approval modes: one decision', () => {
  const table: [ApprovalMode, boolean, boolean, boolean, string][] = [
    // mode, yolo, allowListed, flagged → decision
    ['default', false, true, false, 'run'],
    ['default', false, false, false, 'ask'],
    ['default', false, false, true, 'ask'],
    ['default', true, false, true, 'run'],
    ['detect', false, false, false, 'run'],
    ['detect', false, false, true, 'ask'],
    ['detect', true, false, true, 'run'],
    ['deny', false, true, false, 'run'],
    ['deny', false, false, false, 'refuse'],
    ['deny', true, false, true, 'refuse'],
    ['off', false, false, true, 'run'],
  ];
  it.each(table)('%s yolo=%s allow-listed=%s flagged=%s → %s', (mode, yolo, allowListed, flagged, want) => {
    expect(decideApproval({ mode, yolo, allowListed, flagged })).toBe(want);
  });

  it('deny refuses without asking and says so; off runs; detect asks only for a detector hit', async () => {
    const cwd = tempDir();
    const deny = await run(new PromptBroker({ mode: 'deny' }), 'touch made-in-deny', { cwd });
    expect(deny.prompt).toBeNull();
    expect(deny.content).toContain('Denied by configuration (approvals.mode: deny)');
    expect(fs.existsSync(path.join(cwd, 'made-in-deny'))).toBe(false);

    const off = await run(new PromptBroker({ mode: 'off' }), 'touch made-in-off', { cwd });
    expect(off.prompt).toBeNull();
    expect(fs.existsSync(path.join(cwd, 'made-in-off'))).toBe(true);

    const detect = new PromptBroker({ mode: 'detect' });
    expect((await run(detect, 'touch made-in-detect', { cwd })).prompt).toBeNull();
    fs.mkdirSync(path.join(cwd, 'victim'));
    expect((await run(detect, 'rm -rf victim', { cwd })).prompt).not.toBeNull();
    expect(fs.existsSync(path.join(cwd, 'victim'))).toBe(true);
  });
});
