import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeDanglingToolCalls, GATEWAY_STOP_MARKER } from '../../../src/runtime/transcript-repair.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { transcriptProblems } from '../../unit/runtime/helpers.js';
import { lastMessageSent, startRig, startTurn, waitForLine, type Rig } from './harness.js';

const repo = path.resolve(import.meta.dirname, '../../..');
const child = path.join(repo, 'test/fixtures/runtime-turn-child.ts');

let rig: Rig;
let cleanups: (() => void)[] = [];
beforeEach(async () => {
  rig = await startRig();
});
afterEach(async () => {
  for (const c of cleanups) c();
  cleanups = [];
  await rig.cleanup();
});

/** Resolves with the child's first stdout line that starts with `prefix`; rejects if it exits first. */
function lineFrom(proc: ChildProcess, prefix: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.startsWith(prefix));
      if (line !== undefined) resolve(line);
    });
    proc.once('exit', (code) => reject(new Error(`child exited (${code}) before "${prefix}": ${err}`)));
  });
}

describe('RUN-1 STO-3 a SIGKILL in the middle of a tool call leaves a transcript the model can continue', () => {
  it('the stored call is closed by exactly one synthetic result, once, and the next turn goes on', async () => {
    const shellPid = path.join(rig.cwd, 'shell.pid');
    const shellReady = waitForLine(shellPid);
    const proc = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        child,
        rig.dbFile,
        rig.sessionId,
        rig.demo.baseUrl,
        rig.cwd,
        'run: echo $$ > shell.pid; sleep 30',
      ],
      { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    cleanups.push(() => proc.kill('SIGKILL'));
    const started = lineFrom(proc, 'tool-start ');
    const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.once('exit', (_c, s) => resolve(s)));

    // The child says "tool-start" only after the store accepted the assistant tool-call message;
    // the pid file says bash is running the command.
    const [, , callId] = (await started).split(' ');
    const pgid = Number(await shellReady);
    // The tool runs in its own process group, which a SIGKILLed gateway cannot stop: clean it up here.
    cleanups.push(() => {
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    });
    proc.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');

    // A restarted gateway opens the same file.
    await rig.store.close();
    const store = SqliteSessionStore.open(rig.dbFile);
    try {
      const before = await store.loadTranscript(rig.sessionId);
      expect(before.map((m) => m.role)).toEqual(['user', 'assistant']);
      expect(before[1]!.tool_calls!.map((c) => c.id)).toEqual([callId]);
      expect(transcriptProblems(before)).toEqual([`call ${callId} has 0 results`]);

      const { repaired, added, appendable } = closeDanglingToolCalls(before);
      expect(added).toHaveLength(1);
      expect(added[0]).toMatchObject({ role: 'tool', tool_call_id: callId, name: 'terminal' });
      expect(added[0]!.content).toContain(GATEWAY_STOP_MARKER);
      expect(appendable).toBe(true);
      await store.appendToTranscript(rig.sessionId, added);

      const after = await store.loadTranscript(rig.sessionId);
      expect(after.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
      expect(after.slice(0, 2)).toEqual(before);
      expect(new Set(after.map((m) => m.id)).size).toBe(after.length);
      expect(after.map((m) => m.content)).toEqual(repaired.map((m) => m.content));
      expect(transcriptProblems(after)).toEqual([]);
      expect(closeDanglingToolCalls(after).added).toEqual([]);

      // The model is shown the synthetic result and the conversation continues.
      const next = startTurn(rig, 'are you still there?', {
        history: after,
        transcript: { append: async (id, messages) => void (await store.appendToTranscript(id, messages)) },
      });
      expect((await next.done).outcome).toBe('completed');
      const sent = rig.demo.requests.at(-1)!.body!.messages!;
      expect(sent.find((m) => m.role === 'tool')).toMatchObject({ tool_call_id: callId });
      expect(lastMessageSent(rig.demo, rig.demo.requests.length - 1)).toEqual({
        role: 'user',
        content: 'are you still there?',
      });
      expect(transcriptProblems(await store.loadTranscript(rig.sessionId))).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
