import { beforeAll, describe, expect, it } from 'vitest';
import { exited, isOneLineError, requireBuild, runCli, spawnCli, tempHome, waitForOutput } from './cli.js';

beforeAll(requireBuild);

describe('RUN-4 gatehouse demo-model', () => {
  it('serves /v1/models and chat completions over HTTP, says it is a stand-in, and exits 0 on SIGTERM', async () => {
    const child = spawnCli(tempHome(), ['demo-model', '--port', '0', '--latency-ms', '1']);
    const printed = await waitForOutput(child, 'Press Ctrl-C to stop.');
    expect(printed).toMatch(/scripted stand-in/);
    expect(printed).toMatch(/It is not a language model/);
    const baseUrl = /listening at (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(printed)?.[1];
    expect(baseUrl).toBeDefined();

    const models = (await (await fetch(`${baseUrl}/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(['gatehouse-demo']);

    const completion = await fetch(`${baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'gatehouse-demo',
        messages: [{ role: 'user', content: 'run: ls' }],
        tools: [{ type: 'function', function: { name: 'terminal', parameters: { type: 'object' } } }],
      }),
    });
    expect(completion.status).toBe(200);
    const body = (await completion.json()) as {
      choices: { message: { tool_calls: { function: { name: string; arguments: string } }[] } }[];
    };
    expect(body.choices[0]!.message.tool_calls[0]!.function).toEqual({
      name: 'terminal',
      arguments: '{"command":"ls"}',
    });

    const streamed = await fetch(`${baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'gatehouse-demo',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    const text = await streamed.text();
    expect(text).toContain('data: [DONE]');
    const words = text
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => (JSON.parse(l.slice(6)) as { choices: { delta: { content?: string } }[] }).choices[0])
      .map((c) => c?.delta.content ?? '')
      .join('');
    expect(words).toBe('Demo model (scripted stand-in): you said: hi');

    child.kill('SIGTERM');
    expect(await exited(child)).toBe(0);
  });

  it('refuses a bad --latency-ms in one line', async () => {
    const run = await runCli(tempHome(), ['demo-model', '--latency-ms', 'soon']);
    expect(run.code).not.toBe(0);
    expect(isOneLineError(run.stderr)).toBe(true);
    expect(run.stderr).toContain('--latency-ms must be a whole number');
  });
});
