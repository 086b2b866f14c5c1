import { describe, expect, it } from 'vitest';
import { PromptBroker } from '../../../src/runtime/approvals/broker.js';
import { clarifyTool } from '../../../src/runtime/tools/clarify.js';
import { harness, tempDir } from './harness.js';

function setup(broker = new PromptBroker()) {
  return { broker, ...harness(broker, { cwd: tempDir(), sessionId: 'ses_c', generation: 2 }) };
}

async function ask(
  broker: PromptBroker,
  context: ReturnType<typeof setup>['context'],
  args: Record<string, unknown>,
) {
  const opened = broker.events.next('prompt:opened');
  const result = clarifyTool.run(args, context);
  const { prompt } = await opened;
  const respond = (answer: string | string[]) =>
    broker.respondClarify({
      session_id: 'ses_c',
      execution_generation: 2,
      prompt_id: prompt.prompt_id,
      answer,
    });
  return { prompt, result, respond };
}

describe('RUN-2 clarify tool', () => {
  it('asks the question with its choices and returns the answer', async () => {
    const { broker, context, events } = setup();
    const { prompt, result, respond } = await ask(broker, context, {
      question: 'Which database?',
      choices: ['sqlite', 'postgres'],
    });
    expect(prompt).toMatchObject({
      type: 'clarify.request',
      question: 'Which database?',
      choices: ['sqlite', 'postgres'],
      multi_select: false,
      execution_generation: 2,
    });
    expect(broker.pendingPrompts('ses_c')).toHaveLength(1);
    expect(respond(['sqlite'])).toEqual({ status: 'invalid_choice' });
    expect(respond('postgres')).toEqual({ status: 'resolved' });
    expect(await result).toEqual({ content: 'The user answered: postgres' });
    expect(events[1]).toMatchObject({
      type: 'clarify.settled',
      outcome: { kind: 'answered', answer: 'postgres' },
    });
    expect(respond('sqlite')).toEqual({ status: 'already_resolved' });
  });

  it('accepts several choices for a multi_select question', async () => {
    const { broker, context } = setup();
    const { result, respond } = await ask(broker, context, {
      question: 'Which targets?',
      choices: ['linux', 'mac', 'windows'],
      multi_select: true,
    });
    expect(respond(['linux', 'mac'])).toEqual({ status: 'resolved' });
    expect((await result).content).toBe('The user answered: linux, mac');
  });

  it('treats an empty answer as skipped and tells the model so', async () => {
    const { broker, context, events } = setup();
    const { result, respond } = await ask(broker, context, { question: 'Any preference?' });
    expect(respond('  ')).toEqual({ status: 'resolved' });
    const outcome = await result;
    expect(outcome.isError).toBeUndefined();
    expect(outcome.content).toContain('skipped');
    expect(events[1]).toMatchObject({ outcome: { kind: 'skipped' } });
  });

  it('reports a timeout explicitly', async () => {
    const { context, events } = setup(new PromptBroker({ clarifyTimeoutMs: 20 }));
    const outcome = await clarifyTool.run({ question: 'Still there?' }, context);
    expect(outcome).toMatchObject({ isError: true });
    expect(outcome.content).toContain('in time');
    expect(events[1]).toMatchObject({ outcome: { kind: 'timeout' } });
  });

  it('rejects malformed arguments without asking anyone', async () => {
    const { broker, context } = setup();
    let opened = false;
    broker.events.on(() => (opened = true));
    expect(await clarifyTool.run({}, context)).toMatchObject({ isError: true });
    expect(await clarifyTool.run({ question: 'q', choices: 'a,b' }, context)).toMatchObject({
      isError: true,
    });
    expect(await clarifyTool.run({ question: 'q', multi_select: 'yes' }, context)).toMatchObject({
      isError: true,
    });
    expect(opened).toBe(false);
  });
});
