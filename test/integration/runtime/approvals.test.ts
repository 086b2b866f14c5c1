import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileAlwaysAllowStore } from '../../../src/runtime/approvals/always-store.js';
import { PromptBroker } from '../../../src/runtime/approvals/broker.js';
import type { TurnEvent } from '../../../src/runtime/types.js';
import { transcriptProblems } from '../../unit/runtime/helpers.js';
import { lastMessageSent, nextPrompt, startRig, startTurn, type Rig } from './harness.js';

let rigs: Rig[] = [];
afterEach(async () => {
  await Promise.all(rigs.map((r) => r.cleanup()));
  rigs = [];
});

async function rig(options: { approvalTimeoutMs?: number } = {}): Promise<Rig> {
  const r = await startRig(options);
  rigs.push(r);
  return r;
}

/** A directory the test owns, inside the session cwd, for a dangerous command to delete. */
function victim(r: Rig, name = 'victim'): string {
  const dir = path.join(r.cwd, name);
  fs.mkdirSync(path.join(dir, 'nested'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'nested', 'file.txt'), 'precious');
  return dir;
}

function settled(events: TurnEvent[]) {
  return events.filter((e) => e.type === 'approval.settled');
}

function requested(events: TurnEvent[]) {
  return events.filter((e) => e.type === 'approval.request');
}

describe('RUN-3 approvals through the real broker: the command runs only on a human yes', () => {
  it('granted once: the prompt shows the command and its choices, then rm really deletes', async () => {
    const r = await rig();
    const dir = victim(r);
    const opened = nextPrompt(r.broker);
    const turn = startTurn(r, `run: rm -rf ${dir}`);
    const { prompt } = await opened;
    expect(prompt).toMatchObject({
      type: 'approval.request',
      kind: 'command',
      command: `rm -rf ${dir}`,
      execution_generation: 1,
      session_id: r.sessionId,
      choices: ['once', 'session', 'always', 'deny'],
    });
    expect(fs.existsSync(dir)).toBe(true); // nothing ran while waiting
    expect(
      r.broker.respondApproval({
        session_id: r.sessionId,
        execution_generation: 1,
        prompt_id: prompt.prompt_id,
        choice: 'once',
      }),
    ).toEqual({ status: 'resolved' });
    expect((await turn.done).outcome).toBe('completed');
    expect(fs.existsSync(dir)).toBe(false);
    expect(settled(turn.events)).toEqual([
      {
        type: 'approval.settled',
        prompt_id: prompt.prompt_id,
        outcome: { kind: 'approved', choice: 'once' },
      },
    ]);
    expect(transcriptProblems(await r.store.loadTranscript(r.sessionId))).toEqual([]);
  });

  it('denied: nothing is deleted and the model reads that the user said no', async () => {
    const r = await rig();
    const dir = victim(r);
    const opened = nextPrompt(r.broker);
    const turn = startTurn(r, `run: rm -rf ${dir}`);
    const { prompt } = await opened;
    r.broker.respondApproval({
      session_id: r.sessionId,
      execution_generation: 1,
      prompt_id: prompt.prompt_id,
      choice: 'deny',
    });
    expect((await turn.done).outcome).toBe('completed');
    expect(fs.readFileSync(path.join(dir, 'nested', 'file.txt'), 'utf8')).toBe('precious');
    expect(lastMessageSent(r.demo, 1)?.content).toBe('The user denied this command. It was not run.');
    expect(settled(turn.events)[0]?.outcome).toEqual({ kind: 'denied' });
  });

  it('timed out: reported as a timeout in the tool result and the settled event, never as a denial', async () => {
    const r = await rig({ approvalTimeoutMs: 50 });
    const dir = victim(r);
    const turn = startTurn(r, `run: rm -rf ${dir}`);
    expect((await turn.done).outcome).toBe('completed');
    expect(fs.existsSync(dir)).toBe(true);
    expect(settled(turn.events)[0]?.outcome).toEqual({ kind: 'timeout' });
    const result = (await r.store.loadTranscript(r.sessionId))[2]!.content ?? '';
    expect(result).toMatch(/Nobody answered the approval request in time/);
    expect(result).not.toMatch(/denied/i);
    expect(lastMessageSent(r.demo, 1)?.content).toBe(result);
  });

  it('answers for another prompt_id or a stale generation are refused and leave the prompt waiting', async () => {
    const r = await rig();
    const dir = victim(r);
    const opened = nextPrompt(r.broker);
    const turn = startTurn(r, `run: rm -rf ${dir}`);
    const { prompt } = await opened;
    const answer = { session_id: r.sessionId, execution_generation: 1, prompt_id: prompt.prompt_id };

    expect(r.broker.respondApproval({ ...answer, prompt_id: 'prm_not-this-one', choice: 'once' })).toEqual({
      status: 'not_found',
    });
    expect(r.broker.respondApproval({ ...answer, execution_generation: 0, choice: 'once' })).toEqual({
      status: 'stale_generation',
    });
    expect(r.broker.respondApproval({ ...answer, session_id: 'someone-else', choice: 'once' })).toEqual({
      status: 'not_found',
    });
    expect(r.broker.respondApproval({ ...answer, choice: 'yes please' })).toEqual({
      status: 'invalid_choice',
    });
    // None of those moved anything: the prompt still waits and the directory is intact.
    expect(r.broker.pendingPrompts(r.sessionId).map((p) => p.prompt_id)).toEqual([prompt.prompt_id]);
    expect(fs.existsSync(dir)).toBe(true);
    expect(settled(turn.events)).toEqual([]);

    expect(r.broker.respondApproval({ ...answer, choice: 'deny' })).toEqual({ status: 'resolved' });
    await turn.done;
    // An answer after the fact changes nothing either.
    expect(r.broker.respondApproval({ ...answer, choice: 'once' })).toEqual({ status: 'already_resolved' });
    expect(fs.existsSync(dir)).toBe(true);
    expect(settled(turn.events)).toHaveLength(1);
  });
});

describe('RUN-3 remembered approvals and yolo', () => {
  it('`session`: the same exact command again in the same session runs without a prompt; another asks', async () => {
    const r = await rig();
    const first = victim(r, 'first');
    const second = victim(r, 'second');
    const opened = nextPrompt(r.broker);
    const one = startTurn(r, `run: rm -rf ${first}`);
    const { prompt } = await opened;
    r.broker.respondApproval({
      session_id: r.sessionId,
      execution_generation: 1,
      prompt_id: prompt.prompt_id,
      choice: 'session',
    });
    await one.done;
    expect(fs.existsSync(first)).toBe(false);

    fs.mkdirSync(first);
    const remembered = r.broker.events.next('approval:remembered');
    const again = startTurn(r, `run: rm -rf ${first}`);
    expect(await remembered).toMatchObject({ session_id: r.sessionId, scope: 'session' });
    expect((await again.done).outcome).toBe('completed');
    expect(fs.existsSync(first)).toBe(false);
    expect(requested(again.events)).toEqual([]);

    // The same rule (a recursive delete) on another path is another command: it asks.
    const asked = nextPrompt(r.broker);
    const two = startTurn(r, `run: rm -r ${second}`);
    const other = await asked;
    r.broker.respondApproval({
      session_id: r.sessionId,
      execution_generation: 1,
      prompt_id: other.prompt.prompt_id,
      choice: 'deny',
    });
    expect((await two.done).outcome).toBe('completed');
    expect(fs.existsSync(second)).toBe(true);
    // Remembered for this session only: the always file was not written.
    expect(fs.existsSync(r.alwaysFile)).toBe(false);
  });

  it('`always`: survives a new broker on the same approvals file, for another session', async () => {
    const r = await rig();
    const first = victim(r, 'first');
    const opened = nextPrompt(r.broker);
    const one = startTurn(r, `run: rm -rf ${first}`);
    const { prompt } = await opened;
    r.broker.respondApproval({
      session_id: r.sessionId,
      execution_generation: 1,
      prompt_id: prompt.prompt_id,
      choice: 'always',
    });
    await one.done;
    expect(fs.existsSync(first)).toBe(false);

    // A restarted gateway: a fresh broker reading the same file, a different conversation.
    const restarted = new PromptBroker({ alwaysAllow: new FileAlwaysAllowStore(r.alwaysFile) });
    fs.mkdirSync(first);
    const remembered = restarted.events.next('approval:remembered');
    const two = startTurn(r, `run: rm -rf ${first}`, {
      prompts: restarted,
      sessionId: await r.newSession('agent:main:local:dm:other'),
    });
    expect(await remembered).toMatchObject({ scope: 'always' });
    expect((await two.done).outcome).toBe('completed');
    expect(fs.existsSync(first)).toBe(false);
    expect(requested(two.events)).toEqual([]);
  });

  it('yolo: a dangerous command runs without asking anyone', async () => {
    const r = await rig();
    const dir = victim(r);
    const turn = startTurn(r, `run: rm -rf ${dir}`, { yolo: true });
    expect((await turn.done).outcome).toBe('completed');
    expect(fs.existsSync(dir)).toBe(false);
    expect(requested(turn.events)).toEqual([]);
    expect(r.broker.pendingPrompts(r.sessionId)).toEqual([]);
  });
});
