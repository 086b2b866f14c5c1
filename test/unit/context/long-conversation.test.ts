/**
 * Issue 11: a 300-turn conversation with the demo model at a 4,000-token window never fails,
 * compresses repeatedly, and always keeps the last user message and every tool call with its
 * result. In process (the runner, the in-process demo model, a transcript in memory): the daemon
 * paths are covered by test/e2e/compression.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';
import type { CompressOutcome } from '../../../src/runtime/context/budget.js';
import { isSummaryMessage } from '../../../src/runtime/context/compress.js';
import { prepareCompression } from '../../../src/runtime/context/prepare.js';
import { inProcessDemoModel } from '../../../src/runtime/demo/model.js';
import type { ChatModel } from '../../../src/runtime/model/client.js';
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
});
