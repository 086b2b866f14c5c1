/**
 * The checkpoint store (runtime/checkpoints/store.ts) on a real temp working tree with real git:
 * the limits (count per session, files, bytes), an unchanged tree reusing the newest checkpoint,
 * sessions apart on one shadow repository, and the tool-guard seam that puts them around a tool.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHECKPOINT_DEFAULTS, CheckpointStore } from '../../../src/runtime/checkpoints/store.js';
import { NO_HOOKS } from '../../../src/runtime/hooks/config.js';
import { runHook } from '../../../src/runtime/hooks/run.js';
import { checkpointGuard } from '../../../src/runtime/lifecycle/checkpoint-guard.js';
import { openTurnLifecycle } from '../../../src/runtime/lifecycle/session-lifecycle.js';
import { resolveToolsets } from '../../../src/runtime/tools/registry.js';
import { guardTools, type ToolGuard } from '../../../src/runtime/tool-guards.js';
import type { ToolContext, ToolDefinition } from '../../../src/runtime/types.js';

const temp = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));
const meta = (label: string) => ({ kind: 'tool' as const, tool: 'terminal', label, admission_id: null });

describe('CheckpointStore', () => {
  it('keeps the newest max_per_session checkpoints of a session, and an unchanged tree adds none', async () => {
    const cwd = temp('gh-ck-');
    const store = new CheckpointStore(join(temp('gh-home-'), 'checkpoints'), {
      ...CHECKPOINT_DEFAULTS,
      maxPerSession: 2,
    });
    for (const n of [1, 2, 3]) {
      writeFileSync(join(cwd, 'f.txt'), `version ${n}`);
      expect((await store.snapshot('s1', cwd, meta(`v${n}`))).kind).toBe('created');
    }
    const again = await store.snapshot('s1', cwd, meta('same'));
    expect(again).toMatchObject({ kind: 'unchanged', checkpoint: { checkpoint: 3, label: 'v3' } });
    expect((await store.list('s1', cwd)).map((c) => c.checkpoint)).toEqual([2, 3]);
    // Another session on the same cwd has its own numbering and list.
    expect(await store.snapshot('s2', cwd, meta('other'))).toMatchObject({ checkpoint: { checkpoint: 1 } });
    expect(await store.list('s2', cwd)).toHaveLength(1);

    writeFileSync(join(cwd, 'f.txt'), 'later');
    const done = await store.restore('s1', cwd, 2);
    expect(readFileSync(join(cwd, 'f.txt'), 'utf8')).toBe('version 2');
    expect(done).toMatchObject({ restored: { checkpoint: 2 }, saved: { checkpoint: 4 }, reverted: 1 });
    // The restore's own save counts too, and never drops the checkpoint being restored.
    expect((await store.list('s1', cwd)).map((c) => c.checkpoint)).toEqual([2, 4]);
    await expect(store.restore('s1', cwd, 1)).rejects.toMatchObject({ reason: 'not_found' });
  });

  it('skips a tree over max_files or max_bytes, saying which limit', async () => {
    const cwd = temp('gh-ck-');
    writeFileSync(join(cwd, 'a'), 'x'.repeat(100));
    writeFileSync(join(cwd, 'b'), 'y');
    const root = join(temp('gh-home-'), 'checkpoints');
    const files = new CheckpointStore(root, { ...CHECKPOINT_DEFAULTS, maxFiles: 1 });
    expect(await files.snapshot('s', cwd, meta('x'))).toEqual({
      kind: 'skipped',
      reason: 'the working tree has more than 1 files (checkpoints.max_files)',
    });
    const bytes = new CheckpointStore(root, { ...CHECKPOINT_DEFAULTS, maxBytes: 50 });
    expect(await bytes.snapshot('s', cwd, meta('x'))).toMatchObject({
      kind: 'skipped',
      reason: expect.stringMatching(/more than 50 bytes \(checkpoints\.max_bytes\)/) as unknown,
    });
    expect(await bytes.list('s', cwd)).toEqual([]);
  });
});

describe('checkpointGuard', () => {
  it('saves the tree before a project write and a terminal call, never before a tool that only reads', async () => {
    const cwd = temp('gh-ck-tools-');
    writeFileSync(join(cwd, 'kept.txt'), 'before');
    const store = new CheckpointStore(join(temp('gh-home-'), 'checkpoints'), CHECKPOINT_DEFAULTS);
    const published: { type: string; [field: string]: unknown }[] = [];
    const guard = checkpointGuard(store, {
      sessionId: 's',
      admissionId: undefined,
      cwd,
      publish: (e) => published.push(e),
    });
    const tools = new Map(resolveToolsets(['terminal', 'clarify', 'project']).map((t) => [t.name, t]));
    const context = { signal: new AbortController().signal, cwd } as unknown as ToolContext;
    const guarded = (name: string, args: Record<string, unknown>) =>
      guard.before({ tool: tools.get(name)!, args, context });

    for (const [name, args] of [
      ['read_file', { path: 'kept.txt' }],
      ['list_directory', {}],
      ['clarify', { question: 'q' }],
    ] as const) {
      await guarded(name, args);
    }
    expect(await store.list('s', cwd)).toEqual([]);

    await guarded('write_file', { path: 'new.txt', content: 'x' });
    writeFileSync(join(cwd, 'kept.txt'), 'changed');
    await guarded('terminal', { command: 'true' });
    expect((await store.list('s', cwd)).map((c) => c.label)).toEqual([
      'write_file: new.txt',
      'terminal: true',
    ]);
    expect(published.map((e) => e.type)).toEqual(['checkpoint.created', 'checkpoint.created']);
  });
});

describe('guardTools', () => {
  const context = { signal: new AbortController().signal, cwd: '/' } as unknown as ToolContext;
  let ran = 0;
  const tool: ToolDefinition = {
    name: 't',
    toolset: 'x',
    description: 'd',
    parameters: { type: 'object', properties: {} },
    run: () => {
      ran++;
      return Promise.resolve({ content: 'done' });
    },
  };

  it('a guard that blocks stops the call; notes of the guards before it and after the tool are kept', async () => {
    const noting: ToolGuard = {
      before: () => Promise.resolve({ proceed: true, notes: ['first'] }),
      after: () => Promise.resolve(['after']),
    };
    const blocking: ToolGuard = {
      before: () => Promise.resolve({ proceed: false, result: { content: 'no', isError: true } }),
    };
    const [open] = guardTools([tool], [noting]);
    expect(await open!.run({}, context)).toEqual({ content: 'done\nnote: first\nnote: after' });
    const [shut] = guardTools([tool], [noting, blocking]);
    ran = 0;
    expect(await shut!.run({}, context)).toEqual({ content: 'no\nnote: first', isError: true });
    expect(ran).toBe(0);
    expect(guardTools([tool], [])[0]).toMatchObject({ name: 't', description: 'd' });
  });
});

describe('runHook', () => {
  const input = { event: 'before_tool' as const, session_id: 's', admission_id: null, cwd: tmpdir() };
  const hook = (command: string) => ({ command, timeout_s: 5, on_failure: 'continue' as const });
  const signal = new AbortController().signal;

  it("gets its input whatever the owner's ~/.bashrc does: bash does not read it for a hook", async () => {
    // bash reads ~/.bashrc when its stdin is a socket (as a hook's is), unless told --norc; an rc
    // file that reads a line would take the hook's input, and one that writes would run per hook.
    const home = mkdtempSync(join(tmpdir(), 'gh-bashrc-'));
    writeFileSync(join(home, '.bashrc'), `read taken; echo ran > "${home}/rc-ran"\n`);
    const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home };
    const run = await runHook(hook('read line; test -n "$line" && echo "$line" > "$HOME/got"'), input, {
      signal,
      env,
    });
    expect(run).toEqual({ kind: 'ok' });
    expect(JSON.parse(readFileSync(join(home, 'got'), 'utf8'))).toMatchObject({ event: 'before_tool' });
    expect(existsSync(join(home, 'rc-ran'))).toBe(false);
  });

  it('exit 0 is ok, exit 2 blocks a before_tool call with what it printed, other exits fail', async () => {
    expect(await runHook(hook('read line; test -n "$line"'), input, { signal })).toEqual({ kind: 'ok' });
    expect(await runHook(hook('echo nope; exit 2'), input, { signal })).toEqual({
      kind: 'blocked',
      reason: 'nope',
    });
    expect(await runHook(hook('echo bad >&2; exit 3'), input, { signal })).toEqual({
      kind: 'failed',
      message: 'exited with code 3: bad',
    });
    // Only before_tool hooks block: exit 2 elsewhere is a failure.
    expect(await runHook(hook('exit 2'), { ...input, event: 'turn_end' }, { signal })).toEqual({
      kind: 'failed',
      message: 'exited with code 2',
    });
  });
});

describe('openTurnLifecycle', () => {
  const tool: ToolDefinition = {
    name: 'terminal',
    toolset: 'terminal',
    description: 'd',
    parameters: { type: 'object', properties: {} },
    run: () => Promise.resolve({ content: 'ran' }),
  };
  const signal = new AbortController().signal;

  it('a before_tool hook with on_failure: block stops the call when it fails; an invalid project file is reported', async () => {
    const cwd = temp('gh-lc-');
    mkdirSync(join(cwd, '.gatehouse'));
    writeFileSync(join(cwd, '.gatehouse', 'hooks.yaml'), 'before_tool:\n  - nonsense: true\n');
    const events: Record<string, unknown>[] = [];
    const hook = { command: 'exit 7', name: 'strict', timeout_s: 5, on_failure: 'block' as const };
    const lifecycle = await openTurnLifecycle(
      {
        checkpoints: new CheckpointStore(join(temp('gh-home-'), 'checkpoints')),
        homeHooks: { ...NO_HOOKS, before_tool: [hook] },
      },
      { checkpoints: false, acceptHooks: true },
      { sessionId: 's', admissionId: undefined, cwd, publish: (e) => events.push(e) },
    );
    expect(events[0]).toMatchObject({
      type: 'hook.failed',
      origin: 'project',
      hook: '.gatehouse/hooks.yaml',
    });
    expect(await lifecycle.turnStart(signal)).toEqual([
      expect.stringMatching(
        /^The project's hooks were not run this turn: .*hooks\.yaml: before_tool\.0/,
      ) as unknown,
    ]);
    const [guarded] = guardTools([tool], lifecycle.guards);
    const result = await guarded!.run({}, { signal, cwd } as unknown as ToolContext);
    expect(result).toEqual({
      content:
        'The before_tool hook "strict" (config.yaml) failed: it exited with code 7. It blocks the call when it fails.\n' +
        'The tool call did not run.',
      isError: true,
    });
    expect(events[1]).toMatchObject({ type: 'hook.failed', hook: 'strict', message: 'exited with code 7' });
  });
});
