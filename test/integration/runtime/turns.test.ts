import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEMO_LABEL } from '../../../src/runtime/demo/script.js';
import { transcriptProblems } from '../../unit/runtime/helpers.js';
import { lastMessageSent, startRig, startTurn, type Rig } from './harness.js';

let rig: Rig;
beforeEach(async () => {
  rig = await startRig();
});
afterEach(async () => {
  await rig.cleanup();
});

describe('RUN-1 RUN-2 RUN-4 turns end to end: demo model over HTTP, real tools, SQLite transcript', () => {
  it('a text turn streams its answer and leaves user → assistant in the store', async () => {
    const turn = startTurn(rig, 'hello there');
    const result = await turn.done;
    const expected = `${DEMO_LABEL}: you said: hello there`;
    expect(result).toMatchObject({ outcome: 'completed', final_text: expected, error: null });
    const deltas = turn.events.filter((e) => e.type === 'text.delta').map((e) => e.text);
    expect(deltas.join('')).toBe(expected);
    const stored = await rig.store.loadTranscript(rig.sessionId);
    expect(stored.map((m) => [m.role, m.content, m.admission_id])).toEqual([
      ['user', 'hello there', 'adm-it'],
      ['assistant', expected, 'adm-it'],
    ]);
  });

  it('a tool turn runs bash in the cwd, feeds its output to the model, and stores the four messages in order', async () => {
    const turn = startTurn(rig, 'run: basename "$PWD" | sed "s/^/hi from /"', { yolo: true });
    const result = await turn.done;
    expect(result.outcome).toBe('completed');

    const stored = await rig.store.loadTranscript(rig.sessionId);
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const call = stored[1]!.tool_calls![0]!;
    expect(call.function).toEqual({
      name: 'terminal',
      arguments: JSON.stringify({ command: 'basename "$PWD" | sed "s/^/hi from /"' }),
    });
    expect(stored[2]).toMatchObject({ tool_call_id: call.id, name: 'terminal' });
    expect(stored[2]!.content).toBe('exit code 0\noutput:\nhi from work\n');
    expect(transcriptProblems(stored)).toEqual([]);

    // The second model request carried the tool's output: what the model saw is what bash printed.
    await rig.demo.waitForRequests(2);
    expect(lastMessageSent(rig.demo, 1)).toEqual({
      role: 'tool',
      tool_call_id: call.id,
      content: stored[2]!.content,
    });
    expect(result.final_text).toContain('hi from work');
  });

  it('output over the cap reaches the model with an explicit truncation marker', async () => {
    // 200 000 bytes against the default 64 KiB cap.
    const turn = startTurn(rig, 'run: head -c 200000 /dev/zero | tr "\\0" x; echo; echo THE-END', {
      yolo: true,
    });
    expect((await turn.done).outcome).toBe('completed');
    const sent = lastMessageSent(rig.demo, 1);
    expect(sent?.role).toBe('tool');
    const content = String(sent?.content);
    expect(content).toMatch(/\[\.\.\. output truncated: \d+ bytes dropped \.\.\.\]/);
    expect(content).toContain('THE-END'); // the tail survives the cap
    expect(content.length).toBeLessThan(70_000);
    const stored = await rig.store.loadTranscript(rig.sessionId);
    expect(stored[2]!.content).toBe(content);
  });

  it('max_turns ends the turn failed/max_turns with every tool call answered', async () => {
    const turn = startTurn(rig, 'run: echo once', { maxTurns: 1 });
    const result = await turn.done;
    expect(result.outcome).toBe('failed');
    expect(result.error?.reason).toBe('max_turns');
    expect(result.error?.message).toMatch(/limit of 1 model call/);
    const stored = await rig.store.loadTranscript(rig.sessionId);
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(transcriptProblems(stored)).toEqual([]);
    expect(rig.demo.requests).toHaveLength(1);
  });
});

describe('RUN-2 secrets never reach a tool or the transcript', () => {
  const planted = {
    OPENAI_API_KEY: 'sk-test-5f1c0ffee5f1c0ffee5f1c0ffee',
    GATEHOUSE_SECRET: 'gh-secret-9d8c7b6a5f4e',
    GITHUB_TOKEN: 'ghp_integrationFakeToken0123456789',
    GH_IT_VISIBLE: 'visible-marker-31337',
  };
  beforeEach(() => Object.assign(process.env, planted));
  afterEach(() => {
    for (const name of Object.keys(planted)) delete process.env[name];
  });

  it('`env` run by the model shows the allow-listed variables but none of the gateway secrets, on screen or on disk', async () => {
    const turn = startTurn(rig, 'run: env', { yolo: true });
    expect((await turn.done).outcome).toBe('completed');
    const stored = await rig.store.loadTranscript(rig.sessionId);
    const output = stored[2]!.content ?? '';
    // The command really ran with an environment: the allow-listed names are there, and a variable
    // the user did not list is not, however harmless it looks (docs/tool-reach.md).
    expect(output).toMatch(/^PATH=/m);
    expect(output).toMatch(/^HOME=/m);
    expect(output).not.toContain('GH_IT_VISIBLE');
    const secrets = [planted.OPENAI_API_KEY, planted.GATEHOUSE_SECRET, planted.GITHUB_TOKEN];
    for (const secret of secrets) {
      expect(output).not.toContain(secret);
      for (const request of rig.demo.requests) expect(JSON.stringify(request.body)).not.toContain(secret);
    }
    // The bytes on disk (database and its write-ahead log) hold none of them either.
    await rig.store.close();
    const onDisk = fs
      .readdirSync(rig.dir)
      .filter((name) => name.startsWith(path.basename(rig.dbFile)))
      .map((name) => fs.readFileSync(path.join(rig.dir, name)).toString('latin1'))
      .join('');
    expect(onDisk).toContain(`PWD=${rig.cwd}`);
    for (const secret of secrets) expect(onDisk).not.toContain(secret);
  });
});
