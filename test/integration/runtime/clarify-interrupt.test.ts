import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { transcriptProblems } from '../../unit/runtime/helpers.js';
import {
  groupMembers,
  isRunning,
  lastMessageSent,
  nextPrompt,
  startRig,
  startTurn,
  waitForLine,
  type Rig,
} from './harness.js';

let rig: Rig;
beforeEach(async () => {
  rig = await startRig();
});
afterEach(async () => {
  await rig.cleanup();
});

describe('RUN-2 clarify through the real broker', () => {
  it('an answer reaches the model on its next request', async () => {
    const opened = nextPrompt(rig.broker);
    const turn = startTurn(rig, 'ask: Which colour? [red|green]');
    const { prompt } = await opened;
    expect(prompt).toMatchObject({
      type: 'clarify.request',
      question: 'Which colour?',
      choices: ['red', 'green'],
      multi_select: false,
    });
    expect(
      rig.broker.respondClarify({
        session_id: rig.sessionId,
        execution_generation: 1,
        prompt_id: prompt.prompt_id,
        answer: 'green',
      }),
    ).toEqual({ status: 'resolved' });
    expect((await turn.done).outcome).toBe('completed');
    expect(lastMessageSent(rig.demo, 1)).toMatchObject({
      role: 'tool',
      content: 'The user answered: green',
    });
    expect(turn.events.find((e) => e.type === 'clarify.settled')).toMatchObject({
      outcome: { kind: 'answered', answer: 'green' },
    });
  });

  it('an empty answer is a skip, and the model is told so', async () => {
    const opened = nextPrompt(rig.broker);
    const turn = startTurn(rig, 'ask: Anything to add?');
    const { prompt } = await opened;
    rig.broker.respondClarify({
      session_id: rig.sessionId,
      execution_generation: 1,
      prompt_id: prompt.prompt_id,
      answer: '   ',
    });
    expect((await turn.done).outcome).toBe('completed');
    expect(String(lastMessageSent(rig.demo, 1)?.content)).toMatch(/skipped this question/);
    expect(turn.events.find((e) => e.type === 'clarify.settled')).toMatchObject({
      outcome: { kind: 'skipped' },
    });
  });
});

describe('RUN-1 RUN-2 interrupt during a long command', () => {
  it('kills the whole process group, reports interrupted, and leaves a well-formed transcript', async () => {
    const shellPid = path.join(rig.cwd, 'shell.pid');
    const bgPid = path.join(rig.cwd, 'bg.pid');
    const shellReady = waitForLine(shellPid);
    const bgReady = waitForLine(bgPid);
    const turn = startTurn(rig, 'run: echo $$ > shell.pid; sleep 1000 & echo $! > bg.pid; sleep 1000', {
      yolo: true,
      // Long enough that the tool's own report (after it killed the group) is what gets stored.
      toolStopGraceMs: 10_000,
    });
    const pgid = Number(await shellReady);
    const background = Number(await bgReady);
    expect(isRunning(background)).toBe(true);
    expect(groupMembers(pgid).length).toBeGreaterThanOrEqual(2); // bash, both sleeps

    turn.controller.abort();
    const result = await turn.done;
    expect(result.outcome).toBe('interrupted');
    expect(isRunning(pgid)).toBe(false);
    expect(isRunning(background)).toBe(false);
    expect(groupMembers(pgid)).toEqual([]);

    const stored = await rig.store.loadTranscript(rig.sessionId);
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(stored[2]!.content).toMatch(/^\[interrupted before completion\]/);
    expect(stored[2]!.content).toBe(
      '[interrupted before completion] The user interrupted the turn; the command was stopped, with everything it started, before it printed anything.',
    );
    expect(transcriptProblems(stored)).toEqual([]);
    expect(rig.demo.requests).toHaveLength(1); // no model call after the interrupt
  });
});
