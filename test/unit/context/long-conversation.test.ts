/**
 * Issue 11: a 300-turn conversation with the demo model at a 4,000-token window never fails,
 * compresses repeatedly, and always keeps the last user message and every tool call with its
 * result; and one question followed by a loop of 200 tool calls (a compression inside the turn)
 * never fails either. In process (the runner, the in-process demo model, a transcript in memory): the daemon
 * paths are covered by test/e2e/compression.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';
import type { CompressOutcome } from '../../../src/runtime/context/budget.js';
import { isSummaryMessage } from '../../../src/runtime/context/compress.js';
import { prepareCompression } from '../../../src/runtime/context/prepare.js';
import { inProcessDemoModel } from '../../../src/runtime/demo/model.js';
import type { ChatModel } from '../../../src/runtime/model/client.js';
import type { WireMessage } from '../../../src/runtime/model/wire.js';
import { runTurn } from '../../../src/runtime/runner.js';
import type { ToolDefinition } from '../../../src/runtime/types.js';
import { ScriptedPrompts, transcriptProblems } from '../runtime/helpers.js';

const terminal: ToolDefinition = {
  name: 'terminal',
  toolset: 'terminal',
  description: 'Runs a shell command.',
  parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  run: (args) => Promise.resolve({ content: `$ ${String(args.command)}\n${'output line\n'.repeat(40)}` }),
};

describe('a long conversation at a small window', () => {
  it('300 turns at 4,000 tokens: no failure, repeated compression, last user message and tool pairs kept', async () => {
    const settings = { window: 4000, threshold: 0.75, tailTokens: 600 };
    const demo = inProcessDemoModel({ contextWindow: settings.window });
    let overflows = 0;
    const model: ChatModel = {
      complete: (request) =>
        demo.complete(request).catch((error: unknown) => {
          overflows++;
          throw error;
        }),
    };
    let transcript: TranscriptMessage[] = [];
    let compressions = 0;
    const compress = async (): Promise<CompressOutcome> => {
      const prepared = await prepareCompression({ messages: transcript, model, settings });
      if (prepared.kind === 'nothing') return { kind: 'skipped', reason: prepared.reason };
      if (prepared.kind === 'failed') return { kind: 'skipped', reason: prepared.error };
      transcript = prepared.messages;
      compressions++;
      return { kind: 'compressed', messages: transcript };
    };
    const signal = new AbortController().signal;
    for (let n = 0; n < 300; n++) {
      const text = n % 3 === 0 ? `run: echo step ${n}` : `message ${n}: ${'some words to fill '.repeat(8)}`;
      const input: TranscriptMessage = { role: 'user', content: text, admission_id: `adm-${n}` };
      const history = transcript;
      transcript = [...transcript, input];
      const result = await runTurn({
        sessionId: 's1',
        admissionId: input.admission_id,
        executionGeneration: n + 1,
        model,
        systemPrompt: 'You are a test.',
        tools: [terminal],
        cwd: '/tmp',
        yolo: true,
        maxTurns: 5,
        history,
        input,
        inputStored: true,
        transcript: { append: (_id, messages) => void transcript.push(...messages) },
        context: { settings, compress },
        prompts: new ScriptedPrompts(),
        signal,
        emit: () => undefined,
      });
      expect(result.error, `turn ${n}`).toBeNull();
      expect(result.outcome).toBe('completed');
      const lastUser = transcript.findLast((m) => m.role === 'user' && !isSummaryMessage(m));
      expect(lastUser?.content).toBe(text);
      expect(transcriptProblems(transcript)).toEqual([]);
      if (n % 3 === 0)
        expect(transcript.some((m) => m.role === 'tool' && m.content?.includes(`step ${n}`))).toBe(true);
    }
    expect(compressions).toBeGreaterThan(10);
    expect(overflows).toBe(0);
    expect(transcript.filter(isSummaryMessage)).toHaveLength(1);
  }, 120_000);
  it('one question, then 200 tool calls in one turn at 4,000 tokens: compresses inside the turn, never fails', async () => {
    const settings = { window: 4000, threshold: 0.75, tailTokens: 600 };
    const demo = inProcessDemoModel({ contextWindow: settings.window });
    const question = 'run: inspect every file of the project, one by one';
    let calls = 0;
    let overflows = 0;
    const orphans: string[] = [];
    // The demo model enforces the window on every request and writes the summaries; while the loop
    // lasts, each of its answers is replaced by the next tool call, as an agent working through
    // many files would send.
    const model: ChatModel = {
      complete: async (request) => {
        orphans.push(...wireOrphans(request.messages));
        const result = await demo.complete(request).catch((error: unknown) => {
          overflows++;
          throw error;
        });
        if (!request.tools || request.tools.length === 0 || calls >= 200) return result;
        calls++;
        return {
          ...result,
          text: null,
          toolCalls: [
            {
              id: `call_loop_${calls}`,
              type: 'function',
              function: { name: 'terminal', arguments: JSON.stringify({ command: `cat file-${calls}.ts` }) },
            },
          ],
        };
      },
    };
    let transcript: TranscriptMessage[] = [];
    let compressions = 0;
    const compress = async (): Promise<CompressOutcome> => {
      const prepared = await prepareCompression({ messages: transcript, model, settings });
      if (prepared.kind !== 'ready')
        return { kind: 'skipped', reason: prepared.kind === 'nothing' ? prepared.reason : prepared.error };
      transcript = prepared.messages;
      compressions++;
      expect(transcriptProblems(transcript)).toEqual([]);
      return { kind: 'compressed', messages: transcript };
    };
    const input: TranscriptMessage = { role: 'user', content: question, admission_id: 'adm-1' };
    transcript = [input];
    const result = await runTurn({
      sessionId: 's1',
      admissionId: 'adm-1',
      executionGeneration: 1,
      model,
      systemPrompt: 'You are a test.',
      tools: [terminal],
      cwd: '/tmp',
      yolo: true,
      maxTurns: 250,
      history: [],
      input,
      inputStored: true,
      transcript: { append: (_id, messages) => void transcript.push(...messages) },
      context: { settings, compress },
      prompts: new ScriptedPrompts(),
      signal: new AbortController().signal,
      emit: () => undefined,
    });
    expect(result.error).toBeNull();
    expect(result.outcome).toBe('completed');
    expect(calls).toBe(200);
    expect(overflows).toBe(0);
    expect(orphans).toEqual([]);
    expect(compressions).toBeGreaterThan(5);
    // The question is still the first message, verbatim; one summary; the last call kept with its result.
    expect(transcript[0]).toEqual(input);
    expect(transcript.filter(isSummaryMessage)).toHaveLength(1);
    expect(transcriptProblems(transcript)).toEqual([]);
    expect(transcript.some((m) => m.role === 'tool' && m.content?.includes('cat file-200.ts'))).toBe(true);
    // The summary carries the loop's earlier steps forward (the demo summariser lists commands).
    expect(transcript.find(isSummaryMessage)?.content).toContain('file-1');
  }, 120_000);
});

/** Tool results of a request that answer no earlier call of the same request. */
function wireOrphans(messages: readonly WireMessage[]): string[] {
  const calls = new Set<string>();
  const orphans: string[] = [];
  for (const m of messages) {
    for (const call of (m as { tool_calls?: { id: string }[] }).tool_calls ?? []) calls.add(call.id);
    const id = (m as { tool_call_id?: string }).tool_call_id;
    if (m.role === 'tool' && (id === undefined || !calls.has(id))) orphans.push(id ?? '(no id)');
  }
  return orphans;
}
