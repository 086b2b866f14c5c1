import { afterEach, describe, expect, it } from 'vitest';
import { ModelClient, type ModelDelta } from '../../../src/runtime/model/client.js';
import { inProcessDemoModel } from '../../../src/runtime/demo/model.js';
import {
  runDemoModelCommand,
  startDemoModel,
  type DemoModelServer,
} from '../../../src/runtime/demo/server.js';
import { DEMO_LABEL } from '../../../src/runtime/demo/script.js';
import type { WireTool } from '../../../src/runtime/model/wire.js';

const tool = (name: string): WireTool => ({
  type: 'function',
  function: { name, description: name, parameters: { type: 'object', properties: {} } },
});

let demo: DemoModelServer | null = null;
afterEach(async () => {
  await demo?.close();
  demo = null;
});

async function start(latencyMs = 0) {
  demo = await startDemoModel({ latencyMs });
  return { demo, client: new ModelClient({ baseUrl: demo.baseUrl, model: 'gatehouse-demo' }) };
}

describe('RUN-4 the demo model (a scripted stand-in)', () => {
  it('streams an echo token by token and labels itself', async () => {
    const { client } = await start();
    const deltas: ModelDelta[] = [];
    const result = await client.complete({
      messages: [{ role: 'user', content: 'hello there world' }],
      onDelta: (d) => deltas.push(d),
    });
    expect(result.text).toBe(`${DEMO_LABEL}: you said: hello there world`);
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.map((d) => d.text).join('')).toBe(result.text);
    expect(result.model).toBe('gatehouse-demo');
    expect(result.usage.total_tokens).toBeGreaterThan(0);
  });

  it('calls terminal for `run:` and clarify for `ask:` only when the tool is offered', async () => {
    const { client } = await start();
    const run = await client.complete({
      messages: [{ role: 'user', content: 'run: echo "hi there"' }],
      tools: [tool('terminal')],
    });
    expect(run.toolCalls).toHaveLength(1);
    expect(run.toolCalls[0]!.function.name).toBe('terminal');
    expect(JSON.parse(run.toolCalls[0]!.function.arguments)).toEqual({ command: 'echo "hi there"' });

    const ask = await client.complete({
      messages: [{ role: 'user', content: 'ask: Which colour? [red|green | blue]' }],
      tools: [tool('terminal'), tool('clarify')],
    });
    expect(JSON.parse(ask.toolCalls[0]!.function.arguments)).toEqual({
      question: 'Which colour?',
      choices: ['red', 'green', 'blue'],
    });

    const refused = await client.complete({ messages: [{ role: 'user', content: 'run: ls' }], tools: [] });
    expect(refused.toolCalls).toEqual([]);
    expect(refused.text).toMatch(/`terminal` tool is not available/);
  });

  it('reports a tool result that comes last, and streams reasoning for `think:`', async () => {
    const { client } = await start();
    const report = await client.complete({
      messages: [
        { role: 'user', content: 'run: date' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'terminal', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'Tue 1 Jan' },
      ],
    });
    expect(report.text).toBe(`${DEMO_LABEL}: the tool \`terminal\` returned:\nTue 1 Jan`);
    const thought = await client.complete({ messages: [{ role: 'user', content: 'think: why' }] });
    expect(thought.reasoning).toMatch(/think about: why/);
    expect(thought.text).toBe(`${DEMO_LABEL}: you said: why`);
  });

  it('answers non-streamed requests and lists its model', async () => {
    const { client, demo } = await start();
    const result = await client.complete({ messages: [{ role: 'user', content: 'x' }], stream: false });
    expect(result.text).toBe(`${DEMO_LABEL}: you said: x`);
    const models = (await (await fetch(`${demo.baseUrl}/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(['gatehouse-demo']);
  });

  it('records every request and holds requests at a barrier until released', async () => {
    const { client, demo } = await start();
    demo.hold();
    let settled = false;
    const pending = client
      .complete({ messages: [{ role: 'user', content: 'held' }], headers: { 'x-probe': 'yes' } })
      .finally(() => (settled = true));
    await demo.waitForRequests(1);
    // The request arrived and was recorded, but no answer left while held.
    expect(demo.requests[0]!.body?.messages).toEqual([{ role: 'user', content: 'held' }]);
    expect(demo.requests[0]!.headers['x-probe']).toBe('yes');
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    demo.release();
    expect((await pending).text).toBe(`${DEMO_LABEL}: you said: held`);
    expect(demo.requests).toHaveLength(1);
  });

  it('has an in-process variant with the same script', async () => {
    const model = inProcessDemoModel();
    const deltas: string[] = [];
    const result = await model.complete({
      messages: [{ role: 'user', content: 'same words' }],
      onDelta: (d) => deltas.push(d.text),
    });
    expect(result.text).toBe(`${DEMO_LABEL}: you said: same words`);
    expect(deltas.join('')).toBe(result.text);
  });

  it('the demo-model command serves and prints its base_url, saying it is a stand-in', async () => {
    const written: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = (chunk: string) => written.push(chunk) > 0;
    try {
      demo = await runDemoModelCommand({ port: 0 });
    } finally {
      process.stdout.write = write;
    }
    const said = written.join('');
    expect(said).toContain(demo.baseUrl);
    expect(said).toMatch(/scripted stand-in/);
    expect((await fetch(`${demo.baseUrl}/models`)).status).toBe(200);
  });
});
