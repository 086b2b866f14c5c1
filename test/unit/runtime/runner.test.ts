import { afterEach, describe, expect, it } from 'vitest';
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';
import { startDemoModel, type DemoModelServer } from '../../../src/runtime/demo/server.js';
import { DEMO_LABEL } from '../../../src/runtime/demo/script.js';
import { ModelClient } from '../../../src/runtime/model/client.js';
import { runTurn, type RunTurnOptions } from '../../../src/runtime/runner.js';
import type { ToolDefinition, TurnEvent } from '../../../src/runtime/types.js';
import {
  deferred,
  eventTypes,
  MemorySink,
  ScriptedPrompts,
  startFakeProvider,
  status,
  textAnswer,
  toolCallAnswer,
  transcriptProblems,
  type FakeHandler,
} from './helpers.js';

let closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.map((c) => c()));
  closers = [];
});

async function demoModel(latencyMs = 0): Promise<DemoModelServer> {
  const demo = await startDemoModel({ latencyMs });
  closers.push(() => demo.close());
  return demo;
}

async function fake(handlers: FakeHandler[]) {
  const p = await startFakeProvider(handlers);
  closers.push(() => p.close());
  return p;
}

/** A turn against `baseUrl` with in-memory persistence; the overrides change one thing each. */
function turn(baseUrl: string, text: string, overrides: Partial<RunTurnOptions> = {}) {
  const sink = overrides.transcript instanceof MemorySink ? overrides.transcript : new MemorySink();
  const events: TurnEvent[] = [];
  const controller = new AbortController();
  const options: RunTurnOptions = {
    sessionId: 's1',
    admissionId: 'adm-1',
    executionGeneration: 3,
    model: new ModelClient({ baseUrl, model: 'gatehouse-demo', retry: { baseDelayMs: 1 } }),
    systemPrompt: 'You are a test.',
    tools: [],
    cwd: '/tmp',
    yolo: false,
    maxTurns: 5,
    history: [],
    input: { role: 'user', content: text },
    transcript: sink,
    prompts: new ScriptedPrompts(),
    signal: controller.signal,
    emit: (e) => events.push(e),
    toolStopGraceMs: 100,
    ...overrides,
  };
  return { sink, events, controller, done: runTurn(options) };
}

/** A `terminal` tool that records what the transcript held when it ran. */
function recordingTerminal(sink: MemorySink) {
  const seen: { args: Record<string, unknown>; storedBefore: TranscriptMessage[] }[] = [];
  const tool: ToolDefinition = {
    name: 'terminal',
    toolset: 'terminal',
    description: 'Runs a command (test double).',
    parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    run(args) {
      seen.push({ args, storedBefore: [...sink.messages] });
      return Promise.resolve({ content: `ran ${String(args.command)}` });
    },
  };
  return { tool, seen };
}

describe('RUN-1 turn runner: text turns', () => {
  it('streams deltas in order, stores input then answer, completes with usage', async () => {
    const demo = await demoModel();
    const { sink, events, done } = turn(demo.baseUrl, 'hello runner');
    const result = await done;
    const expected = `${DEMO_LABEL}: you said: hello runner`;
    expect(result.outcome).toBe('completed');
    expect(result.final_text).toBe(expected);
    expect(result.usage.total_tokens).toBeGreaterThan(0);
    const deltas = events.filter((e) => e.type === 'text.delta');
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.map((e) => e.text).join('')).toBe(expected);
    expect(sink.messages).toEqual([
      { role: 'user', content: 'hello runner', admission_id: 'adm-1' },
      { role: 'assistant', content: expected, admission_id: 'adm-1' },
    ]);
    const types = eventTypes(events);
    expect(types[0]).toBe('turn.start');
    expect(types[1]).toBe('message.stored');
    expect(types.slice(-2)).toEqual(['message.stored', 'turn.complete']);
    expect(events.at(-1)).toMatchObject({ type: 'turn.complete', outcome: 'completed', error: null });
  });

  it('sends the admission header and the wire shape of history, without Gatehouse-only fields', async () => {
    const demo = await demoModel();
    const history: TranscriptMessage[] = [
      {
        role: 'user',
        content: 'earlier',
        sender_name: 'alice',
        timestamp: '2025-01-01T00:00:00Z',
        admission_id: 'a0',
      },
      { role: 'assistant', content: 'noted', reasoning: 'private thoughts', admission_id: 'a0' },
    ];
    await turn(demo.baseUrl, 'now', { history }).done;
    const seen = demo.requests[0]!;
    expect(seen.headers['x-gatehouse-admission']).toBe('adm-1');
    expect(seen.body?.messages).toEqual([
      { role: 'system', content: 'You are a test.' },
      { role: 'user', content: '[alice] earlier' },
      { role: 'assistant', content: 'noted' },
      { role: 'user', content: 'now' },
    ]);
  });

  it('streams reasoning deltas and keeps reasoning in the transcript only', async () => {
    const demo = await demoModel();
    const { sink, events, done } = turn(demo.baseUrl, 'think: about it', { reasoning: 'high' });
    await done;
    const reasoning = events.filter((e) => e.type === 'reasoning.delta').map((e) => e.text);
    expect(reasoning.join('')).toMatch(/think about: about it/);
    expect(sink.messages[1]!.reasoning).toBe(reasoning.join(''));
    expect(demo.requests[0]!.body).toMatchObject({ reasoning_effort: 'high' });
  });
});

describe('issue 28 turn runner: steers at step boundaries', () => {
  it('asks for steers before each model call and shows the model what it is given, in order, once', async () => {
    const demo = await demoModel();
    const sink = new MemorySink();
    const terminal = recordingTerminal(sink);
    const boundaries: number[] = [];
    const steer: TranscriptMessage = {
      role: 'user',
      content: 'actually, use staging',
      admission_id: 'adm-1',
      steer_id: 'steer-1',
    };
    const t = turn(demo.baseUrl, 'run: echo one', {
      tools: [terminal.tool],
      transcript: sink,
      // The store's part (applySteers) is the caller's: here, one steer at the second boundary.
      steers: () => {
        boundaries.push(demo.requests.length);
        return Promise.resolve(boundaries.length === 2 ? [steer] : []);
      },
    });
    const result = await t.done;
    expect(result.outcome).toBe('completed');
    // Before the first call (none sent yet) and before the second (after the tool).
    expect(boundaries).toEqual([0, 1]);
    expect(demo.requests[1]!.body?.messages?.at(-1)).toEqual({
      role: 'user',
      content: 'actually, use staging',
    });
    expect(result.final_text).toBe(`${DEMO_LABEL}: you said: actually, use staging`);
    expect(t.events.filter((e) => e.type === 'steer.applied')).toEqual([
      { type: 'steer.applied', admission_id: 'adm-1', steer_id: 'steer-1', text: 'actually, use staging' },
    ]);
  });
});

describe('RUN-1 turn runner: tool turns', () => {
  it('stores the assistant tool call before the tool runs, then its result, then answers', async () => {
    const demo = await demoModel();
    const sink = new MemorySink();
    const terminal = recordingTerminal(sink);
    const t = turn(demo.baseUrl, 'run: echo one two', { tools: [terminal.tool], transcript: sink });
    const result = await t.done;
    expect(result.outcome).toBe('completed');
    // Reassembled from arguments the demo streamed in pieces.
    expect(terminal.seen).toHaveLength(1);
    expect(terminal.seen[0]!.args).toEqual({ command: 'echo one two' });
    const before = terminal.seen[0]!.storedBefore;
    expect(before.at(-1)).toMatchObject({
      role: 'assistant',
      tool_calls: [{ function: { name: 'terminal' } }],
    });
    const callId = before.at(-1)!.tool_calls![0]!.id;
    expect(sink.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(sink.messages[2]).toMatchObject({
      role: 'tool',
      tool_call_id: callId,
      content: 'ran echo one two',
    });
    expect(result.final_text).toBe(`${DEMO_LABEL}: the tool \`terminal\` returned:\nran echo one two`);
    // What the tool returned reached the model.
    expect(demo.requests[1]!.body?.messages?.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: callId,
      content: 'ran echo one two',
    });
    const types = eventTypes(t.events).filter((e) => e.startsWith('tool.'));
    expect(types).toEqual(['tool.start', 'tool.complete']);
    expect(t.events.find((e) => e.type === 'tool.complete')).toMatchObject({
      summary: 'ran echo one two',
      is_error: false,
    });
    expect(transcriptProblems(sink.messages)).toEqual([]);
  });

  it('prepares each offered tool once as the turn starts, before the model is asked, whether it is called or not', async () => {
    const demo = await demoModel();
    const sink = new MemorySink();
    const terminal = recordingTerminal(sink);
    const prepared: string[] = [];
    const requestsAtPrepare: number[] = [];
    const prepare = (name: string) => () => {
      prepared.push(name);
      requestsAtPrepare.push(demo.requests.length);
    };
    const idle: ToolDefinition = {
      ...terminal.tool,
      name: 'idle',
      toolset: 'idle',
      prepare: prepare('idle'),
    };
    const t = turn(demo.baseUrl, 'run: echo one', {
      tools: [{ ...terminal.tool, prepare: prepare('terminal') }, idle],
      transcript: sink,
    });
    expect((await t.done).outcome).toBe('completed');
    expect(prepared).toEqual(['terminal', 'idle']);
    expect(requestsAtPrepare).toEqual([0, 0]);
    expect(terminal.seen).toHaveLength(1);
  });

  it('gives tools a context whose prompts go to the PromptHost with the turn scope', async () => {
    const demo = await demoModel();
    const prompts = new ScriptedPrompts(undefined, { kind: 'answered', answer: 'green' });
    const clarify: ToolDefinition = {
      name: 'clarify',
      toolset: 'clarify',
      description: 'Asks the user (test double).',
      parameters: { type: 'object', properties: { question: { type: 'string' } } },
      async run(args, context) {
        const outcome = await context.askClarify({
          question: String(args.question),
          choices: args.choices as string[],
        });
        return {
          content: outcome.kind === 'answered' ? `user chose ${String(outcome.answer)}` : outcome.kind,
        };
      },
    };
    const { done } = turn(demo.baseUrl, 'ask: Colour? [red|green]', { tools: [clarify], prompts });
    const result = await done;
    expect(result.final_text).toMatch(/user chose green/);
    expect(prompts.asked).toHaveLength(1);
    expect(prompts.asked[0]!.request).toEqual({ question: 'Colour?', choices: ['red', 'green'] });
    expect(prompts.asked[0]!.scope).toMatchObject({
      sessionId: 's1',
      admissionId: 'adm-1',
      executionGeneration: 3,
    });
  });

  it('feeds malformed tool arguments back to the model as a tool error', async () => {
    const p = await fake([
      toolCallAnswer([{ id: 'c1', name: 'terminal', arguments: '{"command": "ls' }]),
      textAnswer('sorry, retrying later'),
    ]);
    const terminal = recordingTerminal(new MemorySink());
    const t = turn(p.baseUrl, 'go', { tools: [terminal.tool] });
    const result = await t.done;
    expect(result.outcome).toBe('completed');
    expect(terminal.seen).toHaveLength(0);
    const fedBack = p.requests[1]!.body.messages.at(-1)!;
    expect(fedBack).toMatchObject({ role: 'tool', tool_call_id: 'c1' });
    expect(fedBack.content).toMatch(/not valid JSON/);
    expect(t.events.find((e) => e.type === 'tool.complete')).toMatchObject({ is_error: true });
  });

  it('feeds an unknown tool name back to the model as a tool error', async () => {
    const p = await fake([
      toolCallAnswer([{ id: 'c9', name: 'launch_rockets', arguments: '{}' }]),
      textAnswer('ok'),
    ]);
    const terminal = recordingTerminal(new MemorySink());
    const { done } = turn(p.baseUrl, 'go', { tools: [terminal.tool] });
    expect((await done).outcome).toBe('completed');
    const fedBack = p.requests[1]!.body.messages.at(-1)!;
    expect(fedBack.content).toMatch(/no tool named "launch_rockets".*Available tools: terminal/);
    // The model only ever saw the session's tools.
    expect(
      (p.requests[0]!.body.tools as { function: { name: string } }[]).map((t) => t.function.name),
    ).toEqual(['terminal']);
  });

  it('turns a tool that throws into an error result the model reads', async () => {
    const demo = await demoModel();
    const broken: ToolDefinition = {
      name: 'terminal',
      toolset: 'terminal',
      description: 'Always fails.',
      parameters: { type: 'object', properties: {} },
      run: () => Promise.reject(new Error('disk on fire')),
    };
    const { sink, done } = turn(demo.baseUrl, 'run: ls', { tools: [broken] });
    const result = await done;
    expect(result.outcome).toBe('completed');
    expect(sink.messages[2]!.content).toBe('The tool "terminal" failed: disk on fire');
    expect(result.final_text).toMatch(/disk on fire/);
  });

  it('fails with max_turns when the model keeps calling tools, transcript well-formed', async () => {
    const demo = await demoModel();
    const terminal = recordingTerminal(new MemorySink());
    const { sink, done } = turn(demo.baseUrl, 'run: true', { tools: [terminal.tool], maxTurns: 1 });
    const result = await done;
    expect(result.outcome).toBe('failed');
    expect(result.error?.reason).toBe('max_turns');
    expect(demo.requests).toHaveLength(1);
    expect(sink.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(transcriptProblems(sink.messages)).toEqual([]);
  });
});

describe('RUN-1 turn runner: model failures', () => {
  it('retries a 500 and stores exactly one final answer', async () => {
    const p = await fake([status(500, { error: { message: 'overloaded' } }), textAnswer('recovered')]);
    const { sink, done } = turn(p.baseUrl, 'hi');
    const result = await done;
    expect(result.final_text).toBe('recovered');
    expect(p.requests).toHaveLength(2);
    expect(sink.messages.filter((m) => m.role === 'assistant')).toHaveLength(1);
  });

  it('fails with reason auth on a 401, after one request', async () => {
    const p = await fake([status(401, { error: { message: 'bad key' } })]);
    const { events, done } = turn(p.baseUrl, 'hi');
    const result = await done;
    expect(result.outcome).toBe('failed');
    expect(result.error?.reason).toBe('auth');
    expect(result.error?.message).toMatch(/rejected the credentials/);
    expect(p.requests).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'turn.complete', outcome: 'failed' });
  });
});

describe('RUN-1 turn runner: interrupts', () => {
  it('stops a streamed answer, keeps what was shown, and says interrupted', async () => {
    const demo = await demoModel(20);
    const controller = new AbortController();
    const events: TurnEvent[] = [];
    const t = turn(demo.baseUrl, 'a b c d e f g h i j k l m n o p', {
      signal: controller.signal,
      emit: (e) => {
        events.push(e);
        if (e.type === 'text.delta') controller.abort();
      },
    });
    const result = await t.done;
    expect(result.outcome).toBe('interrupted');
    const shown = events
      .filter((e) => e.type === 'text.delta')
      .map((e) => e.text)
      .join('');
    expect(t.sink.messages).toEqual([
      { role: 'user', content: 'a b c d e f g h i j k l m n o p', admission_id: 'adm-1' },
      { role: 'assistant', content: shown, admission_id: 'adm-1', interrupted: true },
    ]);
    expect(shown.length).toBeLessThan(`${DEMO_LABEL}: you said: a b c d e f g h i j k l m n o p`.length);
  });

  it('stops a running tool and writes one synthetic result per call, none dangling', async () => {
    const p = await fake([
      toolCallAnswer([
        { id: 'slow', name: 'wait', arguments: '{}' },
        { id: 'never', name: 'wait', arguments: '{}' },
      ]),
    ]);
    const started = deferred();
    let stopped = 0;
    const wait: ToolDefinition = {
      name: 'wait',
      toolset: 'test',
      description: 'Waits until interrupted.',
      parameters: { type: 'object', properties: {} },
      run(_args, context) {
        started.resolve();
        return new Promise((resolve) =>
          context.signal.addEventListener('abort', () => {
            stopped++;
            resolve({ content: 'partial output' });
          }),
        );
      },
    };
    const t = turn(p.baseUrl, 'go', { tools: [wait] });
    await started.promise;
    t.controller.abort();
    const result = await t.done;
    expect(result.outcome).toBe('interrupted');
    expect(stopped).toBe(1);
    expect(p.requests).toHaveLength(1);
    const results = t.sink.messages.filter((m) => m.role === 'tool');
    expect(results.map((m) => m.tool_call_id)).toEqual(['slow', 'never']);
    expect(results[0]!.content).toMatch(/^\[interrupted before completion\].*\npartial output$/s);
    expect(results[1]!.content).toMatch(/before this tool call started/);
    expect(transcriptProblems(t.sink.messages)).toEqual([]);
  });

  it('does not wait forever for a tool that ignores the interrupt', async () => {
    const p = await fake([toolCallAnswer([{ id: 'stuck', name: 'stuck', arguments: '{}' }])]);
    const started = deferred();
    const stuck: ToolDefinition = {
      name: 'stuck',
      toolset: 'test',
      description: 'Never returns.',
      parameters: { type: 'object', properties: {} },
      run() {
        started.resolve();
        return new Promise(() => undefined);
      },
    };
    const t = turn(p.baseUrl, 'go', { tools: [stuck], toolStopGraceMs: 10 });
    await started.promise;
    t.controller.abort('cancelled');
    const result = await t.done;
    expect(result.outcome).toBe('cancelled');
    expect(t.sink.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'stuck' });
    expect(transcriptProblems(t.sink.messages)).toEqual([]);
  });
});

describe('RUN-1 turn runner: a caller that commits the end of the turn itself', () => {
  it('hands over the final answer with the result, and announces it only after the commit', async () => {
    const demo = await demoModel();
    const events: TurnEvent[] = [];
    const commits: { messages: TranscriptMessage[]; outcome: string; eventsBefore: string[] }[] = [];
    const input = { role: 'user' as const, content: 'hello committer', admission_id: 'adm-1' };
    const t = turn(demo.baseUrl, 'hello committer', {
      input,
      inputStored: true,
      emit: (e) => events.push(e),
      commitFinal: async (messages, result) => {
        commits.push({ messages, outcome: result.outcome, eventsBefore: eventTypes(events) });
        await new Promise((r) => setTimeout(r, 5));
      },
    });
    const result = await t.done;
    const expected = `${DEMO_LABEL}: you said: hello committer`;
    expect(result).toMatchObject({ outcome: 'completed', final_text: expected });
    expect(t.sink.messages).toEqual([]); // the caller stored the input and commits the answer
    expect(commits).toHaveLength(1);
    expect(commits[0]!.messages).toEqual([{ role: 'assistant', content: expected, admission_id: 'adm-1' }]);
    expect(commits[0]!.eventsBefore).not.toContain('turn.complete');
    expect(eventTypes(events).slice(0, 2)).toEqual(['turn.start', 'message.stored']);
    expect(events[1]).toMatchObject({ type: 'message.stored', message: input });
    expect(eventTypes(events).slice(-2)).toEqual(['message.stored', 'turn.complete']);
  });

  it('ends the turn failed with transcript_write when that commit fails, announcing no answer', async () => {
    const demo = await demoModel();
    const t = turn(demo.baseUrl, 'doomed', {
      commitFinal: () => Promise.reject(new Error('disk on fire')),
    });
    const result = await t.done;
    expect(result.outcome).toBe('failed');
    expect(result.error).toMatchObject({ reason: 'transcript_write' });
    expect(result.error?.message).toContain('disk on fire');
    expect(t.events.filter((e) => e.type === 'message.stored')).toHaveLength(1); // the input only
  });

  it('commits the words an interrupt cut short as the last message', async () => {
    const demo = await demoModel(20);
    const controller = new AbortController();
    const committed: TranscriptMessage[][] = [];
    const t = turn(demo.baseUrl, 'a b c d e f g h i j k l m n o p', {
      signal: controller.signal,
      emit: (e) => {
        if (e.type === 'text.delta') controller.abort();
      },
      commitFinal: (messages) => {
        committed.push(messages);
        return Promise.resolve();
      },
    });
    expect((await t.done).outcome).toBe('interrupted');
    expect(committed).toHaveLength(1);
    expect(committed[0]).toEqual([
      { role: 'assistant', content: expect.any(String) as string, admission_id: 'adm-1', interrupted: true },
    ]);
  });
});
